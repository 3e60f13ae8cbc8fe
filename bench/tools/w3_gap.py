#!/usr/bin/env python3
"""Warp 3's cycle on a split chain CTA, from a trace whose producer stamps
are warp 3's alone (the probe builds of rows 312 and 314, whose `prod[i][c]`
holds B, warp 3 having chunk c's stage, and C, its copies issued):

    python3 bench/tools/w3_gap.py TRACE.csv

For each scan CTA, the median over chunks 4 onward of the issue (C - B) and
of the gap from one chunk's C to the next chunk's B (flag and stage waits);
and the median over chunks 2 onward of C minus the start of the chain's
wait for that chunk (negative: issued before the chain waited). Printed as
min / median / max over the CTAs. On other builds the stamps mean something
else (docs/trace.md), and so do these figures.
"""
import csv, sys, statistics as st
from collections import defaultdict
prod = defaultdict(dict); scan = defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    i, c = int(r['index']), int(r['chunk'])
    if r['kind'] == 'prod': prod[i][c] = (int(r['t0']), int(r['t1']))
    if r['kind'] == 'scan' and c >= 0: scan[i][c] = (int(r['t0']), int(r['t1']))
iss, gap, lag = [], [], []
for i, p in sorted(prod.items()):
    cs = sorted(p)
    a = [(p[c][1] - p[c][0]) / 1e3 for c in cs if c >= 4]
    b = [(p[c + 1][0] - p[c][1]) / 1e3 for c in cs if c >= 4 and c + 1 in p]
    l = [(p[c][1] - scan[i][c][0]) / 1e3 for c in cs if c >= 2 and c in scan[i]]
    if a and b and l:
        iss.append(st.median(a)); gap.append(st.median(b)); lag.append(st.median(l))
q = lambda x: f'{min(x):.2f} / {st.median(x):.2f} / {max(x):.2f}'
print(f'CTAs {len(iss)}; issue C-B {q(iss)}; gap C->next B {q(gap)}; '
      f'issued minus chain wait start {q(lag)}; late (>0.3) {sum(x > 0.3 for x in lag)}')
