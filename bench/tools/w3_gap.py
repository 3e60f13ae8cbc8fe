#!/usr/bin/env python3
"""Warp 3's cycle on a split chain CTA, from a trace whose producer stamps
are warp 3's alone (the probe builds of rows 312 and 314, whose `prod[i][c]`
holds B, warp 3 having chunk c's stage, and C, its copies issued):

    python3 bench/tools/w3_gap.py TRACE.csv

Per row of the trace: for each scan CTA, the median over chunks 4 onward
of the issue (C - B) and of the gap from one chunk's C to the next chunk's
B (flag and stage waits); and the median over chunks 2 onward of C minus
the start of the chain's wait for that chunk (negative: issued before the
chain waited; "late" counts the CTAs where it is above 0.3 us). Printed
as min / median / max over the CTAs. On other builds the stamps mean
something else (docs/trace.md), and so do these figures.
"""
import statistics
import sys

from trace_report import load, spread


def gaps(d):
    iss, gap, lag = [], [], []
    for i, p in sorted(d['prod'].items()):
        scan = d['scan'][i]
        a = [p[c][1] - p[c][0] for c in p if c >= 4]
        b = [p[c + 1][0] - p[c][1] for c in p if c >= 4 and c + 1 in p]
        lg = [p[c][1] - scan[c][0] for c in p if c >= 2 and c in scan]
        if a and b and lg:
            iss.append(statistics.median(a))
            gap.append(statistics.median(b))
            lag.append(statistics.median(lg))
    return iss, gap, lag


def main():
    for name, d in load(sys.argv[1]).items():
        iss, gap, lag = gaps(d)
        print(f'{name}: CTAs {len(iss)}; issue C-B {spread(iss)}; gap C->next B {spread(gap)}; '
              f'issued minus chain wait start {spread(lag)}; late {sum(x > 0.3 for x in lag)}')


if __name__ == '__main__':
    main()
