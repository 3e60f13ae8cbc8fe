#!/usr/bin/env python3
"""The output of bench/tools/ab_run.sh as one table: per row, each build's
device ms (the lowest over its passes) and its ratio to the first build.

    python3 bench/tools/ab_table.py ab.txt
"""
import re
import sys


def parse(lines):
    """{build: {row: [device ms of each pass]}}, builds in order of appearance."""
    runs, build = {}, None
    for line in lines:
        m = re.match(r'== pass \d+: (\S+)', line)
        if m:
            build = m.group(1)
            runs.setdefault(build, {})
            continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if build and len(cells) == 4 and re.match(r'\d', cells[2]):
            runs[build].setdefault(cells[0], []).append(float(cells[2]))
    return runs


def table(runs):
    builds = list(runs)
    if not builds:
        return 'no "== pass N: BUILD" tables found\n'
    rows = list(runs[builds[0]])
    out = ['| row | ' + ' | '.join(builds) + ' |', '|---' * (len(builds) + 1) + '|']
    for row in rows:
        base = min(runs[builds[0]][row])
        cells = []
        for b in builds:
            ms = runs[b].get(row)
            cells.append('–' if not ms else f'{min(ms):.4f} ({min(ms) / base:.3f})')
        out.append(f'| {row} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(out) + '\n'


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        sys.stdout.write(table(parse(f)))
