#!/usr/bin/env python3
"""Summarises the timelines that `build/gdn_bench --trace FILE` writes
(docs/trace.md): per benchmark row, when the scan CTAs start, when their
first chunk's data arrives, how long a chunk of the state chain takes and
how those chunks spread (the long ones' cost, the waits that were at the
timer's floor), how long the chains and the output warpgroups wait, and
when the prepare units run, stage by stage where the trace has the units'
stage stamps.

    bench/tools/trace_report.py TRACE.csv [--png OUT.png] [--chunks] [--ranks N] [--rounds R] [--sms S]

With --chunks, a table per row, chunk by chunk: when the chains got its
data and how long they waited for it, their step to the next chunk, and
how long the output warpgroups waited for it and took it after the chain
had its data (which says whether the output keeps up); where the trace has
the producer's stamps, when the chunk's loads were issued and how long
before the chain began to wait for them; for a single sequence also when
the prepare units of its chunk slot ended, and how long after the end of
its own head's unit each CTA issued the chunk's loads and had its data
(the flag's hand-off, where units run in the same grid).

With --ranks N, a table per row, rank by rank, where a rank is N
consecutive scan CTAs: N = 2 x the output heads gives one sequence each
(CTA i is (rank x Ho + head) x 2 + half, longest sequence first), so
that a packed row shows which sequences end last and when they entered.

With --rounds R, a table per row of the prepare units' medians, whole and
stage by stage, over each R consecutive unit indices: with R the runner
count of gdn_fused, round j is every runner's (j + 1)-th unit, and the
first round runs code that its SMs have not run before.

With --sms S, a table per row of the SMs' time, for launches in which a
scan CTA holds a whole SM and enters once the prepare units have left it
(gdn_scan behind its prepare grid): the units' hold, estimated as the sum
of the first S scan CTAs' entries, and the scan CTAs' time from entry to
their output's end, split at the chain's start and its first data; then
all of it as microseconds of S SMs, against the span to the last output's
end, with and without the chains' waits for their first data.

All times in microseconds from the call's earliest timestamp. With --png
(and matplotlib), one timeline per row: a line per scan CTA, red where its
chain waits for a stage, and the prepare units as grey bars below.
"""
import argparse
import csv
import math
import statistics
from collections import defaultdict


def load(path):
    rows = defaultdict(lambda: {'scan': defaultdict(dict), 'outc': defaultdict(dict), 'out': {},
                                'entry': {}, 'prod': defaultdict(dict),
                                'unit': {}, 'ustep': defaultdict(dict)})
    with open(path) as f:
        for r in csv.DictReader(f):
            row, kind, i, c = r['row'], r['kind'], int(r['index']), int(r['chunk'])
            t0, t1 = int(r['t0']) / 1000.0, int(r['t1']) / 1000.0
            if kind == 'scan':
                rows[row]['scan'][i][c] = (t0, t1)  # chunk -1: CTA start, chain end
            elif kind == 'outc':
                rows[row]['outc'][i][c] = (t0, t1)  # the output warpgroup's wait for chunk c
            elif kind == 'prod':
                rows[row]['prod'][i][c] = (t0, t1)  # k/v/W producer: has the stage, issued
            elif kind == 'out':
                rows[row]['out'][i] = t0
            elif kind == 'entry':
                rows[row]['entry'][i] = (t0, t1)  # kernel entry, the state's loads begin
            elif kind == 'ustep':
                rows[row]['ustep'][i][c] = t0  # the end of unit i's stage c
            else:
                rows[row]['unit'][i] = (t0, t1)
    return rows


def spread(xs):
    """min / median / max of a list, as text."""
    if not xs:
        return '-'
    return f'{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f}'


def cta_figures(ch):
    """One scan CTA's start, first data, its first chunk's own work (from
    that data to the wait for the next chunk: a cold start or a stall
    shows there, apart from the steady step), median chunk step, waits (all
    and after the first chunk), chain end."""
    start, end = ch[-1]
    chunks = sorted(c for c in ch if c >= 0)
    ready = [ch[c][0] for c in chunks]
    waits = [ch[c][1] - ch[c][0] for c in chunks]
    steps = [b - a for a, b in zip(ready, ready[1:])]
    return {
        'start': start,
        'first': ch[chunks[0]][1] if chunks else end,
        'first_work': ready[1] - ch[chunks[0]][1] if len(chunks) > 1 else None,
        'step': statistics.median(steps) if steps else 0.0,
        'wait': sum(waits),
        'wait_later': sum(waits[1:]),
        'end': end,
        'chunks': len(chunks),
    }


# What ends at each stage stamp of a prepare unit (docs/trace.md), then at
# the unit's end.
STAGES = ['alpha, beta staged', 'g formed', 'q, k arrived', 'QK, KK formed',
          'P and A staged', '8 x 8 inverses', 'rung to 16', 'rung to 32', 'rung to 64',
          'W stored']


def unit_stages(d):
    """Unit index -> how long each stage took (from the stamp before it, the
    first from the unit's start), for the units with every stamp."""
    out = {}
    for u, steps in d['ustep'].items():
        if u not in d['unit'] or len(steps) != len(STAGES) - 1:
            continue
        start, end = d['unit'][u]
        marks = [start] + [steps[k] for k in range(len(STAGES) - 1)] + [end]
        out[u] = [marks[k + 1] - marks[k] for k in range(len(STAGES))]
    return out


def stage_table(d):
    """Per stage, the spread over the units of how long it took."""
    per = defaultdict(list)
    for took in unit_stages(d).values():
        for k, t in enumerate(took):
            per[k].append(t)
    if not per:
        return
    print('| prepare unit stage (us) | min / median / max |')
    print('|---|---|')
    for k, what in enumerate(STAGES):
        print(f'| {what} | {spread(per[k])} |')
    print()


def most_at_once(spans):
    """The most intervals (start, end) that hold one instant; one ending
    where another starts is not counted with it. Over the SM count, it says
    how many prepare CTAs an SM held at once (four by the launch bounds,
    more where registers and shared memory allow)."""
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    now = most = 0
    for _, step in events:  # at one time, ends (-1) sort before starts
        now += step
        most = max(most, now)
    return most


# %globaltimer moves in 32 ns steps on the GPUs measured so far: a wait of
# two steps or less is a stage that was there when the chain looked.
TIMER_FLOOR = 0.064


def step_tail(d):
    """After the first chunk: how the chain's own work on a chunk (its data
    to the wait for the next one) spreads, how much of it lies above the
    median (summed per CTA: the long steps' cost), and the share of the
    stage waits at the timer's floor."""
    work, waits, by_cta = [], [], []
    for ch in d['scan'].values():
        cs = sorted(c for c in ch if c >= 1)
        w = [ch[b][0] - ch[a][1] for a, b in zip(cs, cs[1:]) if b == a + 1]
        work += w
        waits += [ch[c][1] - ch[c][0] for c in cs]
        by_cta.append(w)
    if not work:
        return
    mid = statistics.median(work)
    p90 = sorted(work)[math.ceil(0.9 * len(work)) - 1]  # nearest rank
    per = [sum(max(0.0, x - mid) for x in w) for w in by_cta]
    floor = sum(x <= TIMER_FLOOR + 1e-6 for x in waits) / len(waits)  # the stamps are ns over 1000
    print(f'| chunk work after the first chunk, median / 90th percentile | {mid:.2f} / {p90:.2f} |')
    print(f'| its excess over that median, summed per CTA | {spread(per)} |')
    print(f'| stage waits after the first chunk at the timer floor (<= {TIMER_FLOOR} us) | '
          f'{100 * floor:.0f} % |')


def report(name, d):
    ctas = [cta_figures(ch) for ch in d['scan'].values() if -1 in ch]
    units = list(d['unit'].values())
    print(f'## {name}\n')
    print('| quantity (us) | min / median / max |')
    print('|---|---|')
    print(f'| scan CTAs | {len(ctas)} |')
    entry = [(e, d['scan'][i][-1][0]) for i, e in d['entry'].items() if -1 in d['scan'].get(i, {})]
    if entry:  # traces written before the entry stamp have none
        print(f'| CTA entry | {spread([e[0] for e, _ in entry])} |')
        print(f'| entry to the state\'s loads | {spread([e[1] - e[0] for e, _ in entry])} |')
        print(f'| initial state loaded (to CTA start) | {spread([s - e[1] for e, s in entry])} |')
    for key, what in [('start', 'CTA start'), ('first', "first chunk's data"),
                      ('first_work', "first chunk's work (its data to the next chunk's wait)"),
                      ('step', 'chunk step (median per CTA)'), ('wait', 'waits for stages, all'),
                      ('wait_later', 'waits after the first chunk'), ('end', 'chain end')]:
        print(f'| {what} | {spread([c[key] for c in ctas if c[key] is not None])} |')
    step_tail(d)
    print(f'| output stores end | {spread(list(d["out"].values()))} |')
    lag = [d['out'][i] - ch[-1][1] for i, ch in d['scan'].items() if -1 in ch and i in d['out']]
    print(f'| output end after chain end | {spread(lag)} |')
    owait = [sum(b - a for a, b in oc.values()) for oc in d['outc'].values()]
    print(f'| output warpgroup waits, all | {spread(owait)} |')
    if units:
        print(f'| prepare units | {len(units)} |')
        print(f'| unit start | {spread([u[0] for u in units])} |')
        print(f'| unit duration | {spread([u[1] - u[0] for u in units])} |')
        print(f'| unit end | {spread([u[1] for u in units])} |')
        print(f'| units running at once, most | {most_at_once(units)} |')
    producer_lines(d)
    print()
    stage_table(d)


def producer_lines(d):
    """Where the k/v/W producer's time goes, over every CTA's chunks after
    the first (traces written before its stamps have none): from the
    stage's release (the chain begins chunk c - 2 right after it releases
    chunk c - 3's stage) to the producer having it; from then to every load
    issued (the ready flag's wait among them, where there is one); how long
    before the chain began waiting for the chunk they were issued (below
    zero: after); and, for chunks the chain waited for (over 0.1 us), from
    the loads issued to the chain having the data: the loads' own time."""
    react, issue, lead, land = [], [], [], []
    for i, pr in d['prod'].items():
        ch = d['scan'].get(i, {})
        for c, (had, issued) in pr.items():
            if c < 1 or c not in ch:
                continue
            issue.append(issued - had)
            lead.append(ch[c][0] - issued)
            if c >= 3 and c - 2 in ch:
                react.append(had - ch[c - 2][0])
            if ch[c][1] - ch[c][0] > 0.1 + 1e-9:  # in us, from ns: no rounding at 0.1
                land.append(ch[c][1] - issued)
    if not issue:
        return
    print(f'| producer: stage released to the producer having it | {spread(react)} |')
    print(f'| producer: having it to its loads issued | {spread(issue)} |')
    print(f'| loads issued before the chain waits for them | {spread(lead)} |')
    print(f'| loads issued to the chain\'s data, where it waited ({len(land)}) | {spread(land)} |')


def chunk_table(name, d):
    """Per chunk index: medians over the scan CTAs that have that chunk."""
    scan = {i: ch for i, ch in d['scan'].items() if -1 in ch}
    counts = {len([c for c in ch if c >= 0]) for ch in scan.values()}
    n = max(counts, default=0)
    # One sequence: every CTA has n chunks and chunk c is slot c, whose
    # units are c * Ho .. c * Ho + Ho - 1 (docs/trace.md).
    ho = len(d['unit']) // n if len(counts) == 1 and n and len(d['unit']) % n == 0 else 0
    med = lambda xs: f'{statistics.median(xs):.2f}' if xs else '-'
    print(f'### {name}, chunk by chunk (us, medians over CTAs)\n')
    print("| chunk | CTAs | data | wait (median / max) | step to the next | output's wait "
          "| output takes it after the chain | loads issued | ahead of the chain's wait "
          "| its units end (min / max) | own unit's end to loads issued / to data |")
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for c in range(n):
        have = [i for i, ch in scan.items() if c in ch]
        waits = [scan[i][c][1] - scan[i][c][0] for i in have]
        steps = [scan[i][c + 1][0] - scan[i][c][0] for i in have if c + 1 in scan[i]]
        oc = [d['outc'][i][c] for i in have if c in d['outc'].get(i, {})]
        lag = [d['outc'][i][c][1] - scan[i][c][1] for i in have if c in d['outc'].get(i, {})]
        pr = [(d['prod'][i][c][1], scan[i][c][0]) for i in have if c in d['prod'].get(i, {})]
        ends = [d['unit'][u][1] for u in range(c * ho, (c + 1) * ho) if u in d['unit']]
        units = f'{min(ends):.2f} / {max(ends):.2f}' if ends else '-'
        # The unit of CTA i's own head (i = (rank x Ho + head) x 2 + half):
        # from its end stamp, the flag's release and poll and the copies.
        own = [(d['prod'][i][c][1], scan[i][c][1], d['unit'][c * ho + i // 2 % ho][1])
               for i in have if ho and c in d['prod'].get(i, {}) and c * ho + i // 2 % ho in d['unit']]
        print(f'| {c} | {len(have)} | {med([scan[i][c][1] for i in have])} | '
              f'{med(waits)} / {max(waits):.2f} | {med(steps)} | {med([b - a for a, b in oc])} | '
              f'{med(lag)} | {med([p for p, _ in pr])} | {med([w - p for p, w in pr])} | '
              f'{units} | {med([p - u for p, _, u in own])} / {med([t - u for _, t, u in own])} |')
    print()


def span(xs, fmt='{:.2f}'):
    """min-max of a list as text, one figure where they agree."""
    if not xs:
        return '-'
    lo, hi = fmt.format(min(xs)), fmt.format(max(xs))
    return lo if lo == hi else f'{lo}-{hi}'


def rank_table(name, d, per):
    """Per rank of `per` consecutive scan CTAs: the spread (min-max) over
    its CTAs of their chunks, entry, chain start, first data, chain end and
    the end of their output's stores."""
    scan = {i: ch for i, ch in d['scan'].items() if -1 in ch}
    print(f'### {name}, rank by rank ({per} scan CTAs a rank; us, min-max over them)\n')
    print('| rank | CTAs | chunks | entry | chain start | first data | chain end | output end |')
    print('|---|---|---|---|---|---|---|---|')
    for r in sorted({i // per for i in scan}):
        have = sorted(i for i in scan if i // per == r)
        figs = [cta_figures(scan[i]) for i in have]
        print(f'| {r} | {len(have)} | {span([f["chunks"] for f in figs], "{}")} | '
              f'{span([d["entry"][i][0] for i in have if i in d["entry"]])} | '
              f'{span([f["start"] for f in figs])} | {span([f["first"] for f in figs])} | '
              f'{span([f["end"] for f in figs])} | '
              f'{span([d["out"][i] for i in have if i in d["out"]])} |')
    print()


def round_table(name, d, per):
    """Per round of `per` consecutive unit indices, the median over its
    units of the whole unit and of each stage (gdn_fused's runner r of R
    runs units r, r + R, ...: with per = R, round j is every runner's
    (j + 1)-th unit)."""
    took = unit_stages(d)
    if not took:
        return
    print(f'### {name}, round by round ({per} units a round; us, medians)\n')
    print('| round | units | unit | ' + ' | '.join(STAGES) + ' |')
    print('|---|' + '--:|' * (len(STAGES) + 2))
    for r in sorted({u // per for u in took}):
        have = [took[u] for u in sorted(took) if u // per == r]
        whole = statistics.median(sum(t) for t in have)
        cols = [statistics.median(t[k] for t in have) for k in range(len(STAGES))]
        print(f'| {r} | {len(have)} | {whole:.2f} | ' + ' | '.join(f'{c:.2f}' for c in cols) + ' |')
    print()


def sm_table(name, d, sms):
    """The SMs' time of a call in SM-us (see --sms): what the units and the
    scan CTAs hold, and how busy that keeps `sms` SMs until the last
    output's end."""
    have = [i for i, ch in d['scan'].items() if -1 in ch and i in d['entry'] and i in d['out']]
    if not have:
        print(f"### {name}, the SMs' time: no scan CTA has entry and output stamps\n")
        return
    entries = sorted(d['entry'][i][0] for i in have)
    figs = {i: cta_figures(d['scan'][i]) for i in have}
    units = sum(entries[:sms])
    scan = sum(d['out'][i] - d['entry'][i][0] for i in have)
    pro = sum(figs[i]['start'] - d['entry'][i][0] for i in have)
    wait = sum(figs[i]['first'] - figs[i]['start'] for i in have)
    total, end = units + scan, max(d['out'][i] for i in have)
    print(f"### {name}, the SMs' time ({sms} SMs; SM-us)\n")
    print('| part | SM-us |')
    print('|---|--:|')
    print(f'| the units, until each SM\'s first scan CTA enters '
          f'(the first {min(sms, len(have))} entries) | {units:.1f} |')
    print(f'| the scan CTAs, entry to output end ({len(have)} CTAs) | {scan:.1f} |')
    print(f'| of which entry to chain start | {pro:.1f} |')
    print(f'| of which chain start to first data | {wait:.1f} |')
    print(f'| of which first data to output end | {scan - pro - wait:.1f} |')
    print(f'| together | {total:.1f} |\n')
    busy = f'{100 * total / (sms * end):.0f} %' if end > 0 else '-'
    print(f'Together {total / sms:.2f} us of {sms} SMs; the last output ends at {end:.2f} us '
          f'(busy {busy}); without the waits for first data, {(total - wait) / sms:.2f} us.\n')


def plot(rows, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(rows), 1, figsize=(11, 3 * len(rows)), squeeze=False)
    for ax, (name, d) in zip(axes[:, 0], sorted(rows.items())):
        for y, (i, ch) in enumerate(sorted(d['scan'].items())):
            if -1 not in ch:
                continue
            ax.hlines(y, ch[-1][0], ch[-1][1], color='tab:blue', lw=1)
            for c, (a, b) in ch.items():
                if c >= 0 and b - a > 0.1:
                    ax.hlines(y, a, b, color='tab:red', lw=3)
        base = -2
        for u, (a, b) in sorted(d['unit'].items()):
            ax.hlines(base - (u % 40) * 0.3, a, b, color='0.6', lw=1)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel('us')
        ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('trace')
    ap.add_argument('--png')
    ap.add_argument('--chunks', action='store_true', help='a table per row, chunk by chunk')
    ap.add_argument('--ranks', type=int, metavar='N',
                    help='a table per row, rank by rank: N scan CTAs a rank (2 x the output heads)')
    ap.add_argument('--rounds', type=int, metavar='R',
                    help="a table per row, round by round: R unit indices a round "
                         "(gdn_fused's runners)")
    ap.add_argument('--sms', type=int, metavar='S',
                    help="a table per row of the SMs' time, for S SMs (132 on an H100 or H200)")
    args = ap.parse_args()
    if args.ranks is not None and args.ranks < 1:
        ap.error('--ranks: N must be at least 1')
    if args.rounds is not None and args.rounds < 1:
        ap.error('--rounds: R must be at least 1')
    if args.sms is not None and args.sms < 1:
        ap.error('--sms: S must be at least 1')
    rows = load(args.trace)
    for name in rows:
        report(name, rows[name])
        if args.chunks:
            chunk_table(name, rows[name])
        if args.ranks:
            rank_table(name, rows[name], args.ranks)
        if args.rounds:
            round_table(name, rows[name], args.rounds)
        if args.sms:
            sm_table(name, rows[name], args.sms)
    if args.png:
        try:
            plot(rows, args.png)
        except ImportError:
            print('matplotlib is not installed: no plot')


if __name__ == '__main__':
    main()
