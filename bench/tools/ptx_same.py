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


def read_two(argv, doc, read, tool, what):
    """The two files named on the command line, each through read(path), or
    None once the reason is printed (the usage from doc, a file that cannot
    be read, or neither file holding any `what`)."""
    if len(argv) != 3:
        print(doc.strip().split('\n\n')[1].strip(), file=sys.stderr)
        return None
    sides = []
    for path in argv[1:]:
        try:
            sides.append(read(path))
        except OSError as e:
            print(f'{tool}: {path}: {e.strerror}', file=sys.stderr)
            return None
    if not sides[0] and not sides[1]:
        print(f'{tool}: no {what} in either file', file=sys.stderr)
        return None
    return sides


def side_by_side(a, b, head, row):
    """A markdown table: head (its cells), then one row for each name in
    either mapping, A's order first. row(x, y) gives the cells after the
    name (x or y None where that side lacks the name) and whether the two
    are the same. Returns 0 if every row is the same, else 1."""
    print('| ' + ' | '.join(head) + ' |')
    print('|---' * len(head) + '|')
    rc = 0
    for n in list(a) + [n for n in b if n not in a]:
        cells, same = row(a.get(n), b.get(n))
        print(f'| {n} | {cells} |')
        rc |= not same
    return rc


def ptx_row(x, y):
    if x is None or y is None:
        return f'only in {"B" if x is None else "A"} |', False
    if x == y:
        return 'same |', True
    line, u, v = first_difference(x, y)
    return f'differs | line {line}: `{u}` / `{v}`', False


def read_entries(path):
    with open(path) as f:
        return entries(f.read())


def main(argv):
    sides = read_two(argv, __doc__, read_entries, 'ptx_same.py', '.entry')
    if sides is None:
        return 2
    return side_by_side(*sides, ['kernel', 'PTX', 'first difference'], ptx_row)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
