#!/usr/bin/env python3
"""Which kernels of two SASS listings are the same machine code, function
by function (`cuobjdump -sass CUBIN` or `nvdisasm -c CUBIN`, saved).

    python3 bench/tools/sass_same.py A.sass B.sass

ptx_same.py says whether ptxas was given the same program; this says
what it made of two programs that differ. Each function found in either
listing gets one row:
- same: the same instructions in the same order (addresses aside);
- reordered: the same instructions once register, predicate and barrier
  numbers and branch targets are set aside, in another order or with
  other registers, so the two do the same loads, stores, fences, waits
  and products;
- differs: the opcodes whose counts differ (B's count minus A's), most
  first; or only in one listing.
Padding NOPs are left out of every comparison (ptxas aligns branch
targets with them), and counted in the instructions column.
Exit status: 0 if every function is the same, 1 otherwise, 2 on bad input.
"""
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ptx_same import read_two, side_by_side  # noqa: E402
from wgmma_gaps import read_listing  # noqa: E402

# Register-like operands whose numbers ptxas chooses: R, UR, P, UP, B
# (convergence barriers), SB (scoreboards), and branch targets.
NUMBERED = re.compile(r"\b(U?R|U?P|B|SB)(\d+)\b")
TARGET = re.compile(r"0x[0-9a-f]+")


def opcode(insn):
    """The instruction's opcode with its modifiers, its guard dropped."""
    words = insn.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def shape(insn):
    """The instruction with its numbered operands and targets blanked."""
    return TARGET.sub("0x_", NUMBERED.sub(r"\1_", insn))


def compare(a, b):
    """same / reordered / differs, and for differs the opcode deltas."""
    a = [i for i in a if opcode(i) != "NOP"]
    b = [i for i in b if opcode(i) != "NOP"]
    if a == b:
        return "same", ""
    if collections.Counter(map(shape, a)) == collections.Counter(map(shape, b)):
        return "reordered", ""
    ca, cb = collections.Counter(map(opcode, a)), collections.Counter(map(opcode, b))
    delta = [(op, cb[op] - ca[op]) for op in set(ca) | set(cb) if cb[op] != ca[op]]
    delta.sort(key=lambda d: (-abs(d[1]), d[0]))
    shown = ", ".join(f"`{op}` {d:+d}" for op, d in delta[:6])
    if len(delta) > 6:
        shown += f", {len(delta) - 6} more"
    return "differs", shown or "operands only"


def sass_row(x, y):
    if x is None or y is None:
        return f'{len(x if y is None else y)} | only in {"B" if x is None else "A"} |', False
    verdict, shown = compare(x, y)
    return f"{len(x)} / {len(y)} | {verdict} | {shown}", verdict == "same"


def read_functions(path):
    return {name: [t for _, t in insns] for name, insns, _ in read_listing(path)}


def main(argv):
    sides = read_two(argv, __doc__, read_functions, "sass_same.py", "function")
    if sides is None:
        return 2
    head = ["function", "instructions A / B", "SASS", "opcodes whose counts differ (B - A)"]
    return side_by_side(*sides, head, sass_row)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
