#!/usr/bin/env python3
"""What each kernel of a benchmark row moves through DRAM, from the CSV
that bench/tools/ncu_memory.sh writes a row (ncu --csv --page details):
one line a profiled launch, with ncu's own duration, the DRAM bytes read
and written, the rate they make, ncu's DRAM throughput as a share of the
peak, and the L2 hit rate.

    python3 bench/tools/ncu_memory.py DIR/ROW.csv ...

The row is the file's name. Lines that are not CSV (ncu's ==PROF== notes,
the benchmark's own table) are skipped.
"""
import csv
import io
import os
import sys

WANT = {
    'gpu__time_duration.sum': 'ns',
    'dram__bytes_read.sum': 'read',
    'dram__bytes_write.sum': 'write',
    'DRAM Throughput': 'pct',
    'lts__t_sector_hit_rate.pct': 'l2',
}


def number(text):
    return float(text.replace(',', ''))


def launches(path):
    """[(kernel, grid, {key: value})], one a profiled launch, in ID order."""
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    found = {}
    for r in csv.DictReader(io.StringIO(''.join(lines))):
        key = WANT.get(r.get('Metric Name'))
        if key is None:
            continue
        kernel = found.setdefault(r['ID'], (r['Kernel Name'], r['Grid Size'], {}))
        kernel[2][key] = number(r['Metric Value'])
    return [found[i] for i in sorted(found, key=int)]


def table(paths):
    out = ['| row | kernel | grid | ncu us | DRAM read MB | DRAM write MB '
           '| DRAM TB/s | DRAM % of peak | L2 hit % |',
           '|---|---|---|--:|--:|--:|--:|--:|--:|']
    for path in paths:
        row = os.path.splitext(os.path.basename(path))[0]
        got = launches(path)
        if not got:
            out.append(f'| {row} | no launch in the file | | | | | | | |')
        for kernel, grid, m in got:
            if any(k not in m for k in WANT.values()):
                missing = ', '.join(k for k, v in WANT.items() if v not in m)
                out.append(f'| {row} | {kernel} | {grid} | missing: {missing} | | | | | |')
                continue
            rate = (m["read"] + m["write"]) / m["ns"] / 1e3  # bytes a ns are GB/s
            out.append(f'| {row} | {kernel} | {grid} | {m["ns"] / 1e3:.2f} '
                       f'| {m["read"] / 1e6:.1f} | {m["write"] / 1e6:.1f} | {rate:.2f} '
                       f'| {m["pct"]:.1f} | {m["l2"]:.1f} |')
    return '\n'.join(out) + '\n'


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    sys.stdout.write(table(argv[1:]))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
