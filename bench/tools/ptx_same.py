#!/usr/bin/env python3
"""Which kernels of two PTX files are the same, entry by entry.

    python3 bench/tools/ptx_same.py A.ptx B.ptx

A kernel whose PTX is the same in both is the same program for ptxas, so
a timing or test of it in one build holds for the other. Prints one row
per entry (.entry) found in either file: same, differs (with the first
line that differs, numbered within the entry), or only in one file.
Exit status: 0 if every entry is the same, 1 otherwise, 2 on bad input.
"""
import re
import sys

ENTRY = re.compile(r'^(?:\.visible )?\.entry (\w+)\(', re.M)


def entries(text):
    """Entry name -> its text, from `.entry NAME(` up to the next entry."""
    starts = [(m.start(), m.group(1)) for m in ENTRY.finditer(text)]
    out = {}
    for i, (at, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        out[name] = text[at:end].rstrip().split('\n')
    return out


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i + 1, x.strip(), y.strip()
    n = min(len(a), len(b))
    return n + 1, (a[n].strip() if n < len(a) else '(end)'), (b[n].strip() if n < len(b) else '(end)')


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().split('\n\n')[1].strip(), file=sys.stderr)
        return 2
    files = []
    for path in argv[1:]:
        try:
            with open(path) as f:
                files.append(entries(f.read()))
        except OSError as e:
            print(f'ptx_same.py: {path}: {e.strerror}', file=sys.stderr)
            return 2
    a, b = files
    if not a and not b:
        print('ptx_same.py: no .entry in either file', file=sys.stderr)
        return 2
    names = list(a) + [n for n in b if n not in a]
    print('| kernel | PTX | first difference |')
    print('|---|---|---|')
    rc = 0
    for n in names:
        if n not in a or n not in b:
            print(f'| {n} | only in {"B" if n not in a else "A"} | |')
            rc = 1
        elif a[n] == b[n]:
            print(f'| {n} | same | |')
        else:
            line, x, y = first_difference(a[n], b[n])
            print(f'| {n} | differs | line {line}: `{x}` / `{y}` |')
            rc = 1
    return rc


if __name__ == '__main__':
    sys.exit(main(sys.argv))
