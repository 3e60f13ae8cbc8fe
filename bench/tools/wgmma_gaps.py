#!/usr/bin/env python3
"""How closely a kernel issues its wgmma, from its SASS listing
(`cuobjdump -sass CUBIN` or `nvdisasm -c CUBIN`, saved to a file).

    python3 bench/tools/wgmma_gaps.py LISTING [--function NAME] [--cycles]

For each function: its instruction count, then each wgmma group (the
HGMMAs up to the one that commits them, marked gsb0) with the number of
instructions between one HGMMA's issue and the next, and each wgmma wait
(WARPGROUP.DEPBAR) with the instructions from it to the next HGMMA. A warp
issues in order, so an HGMMA waits for everything placed before it: long
gaps inside a group, or between a wait and the next product, are where the
tensor pipe may idle (docs/generic.md, "What the state warpgroup's machine
code shows").

--cycles reads each instruction's control word as well (cuobjdump prints
it on the line after the instruction; nvdisasm -c does not) and adds, to
each wait, the stall cycles ptxas set from it to the next HGMMA, and a
table of the innermost loops that issue wgmma (a chunk loop) with their
instructions and stall cycles. Stall cycles are what the warp spends
between issues when nothing else holds it: a floor, since waits on
scoreboards, barriers and the tensor pipe come on top."""
import argparse
import re
import sys

# One instruction: its address in a /*...*/ comment, then the text up to ';'.
INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);")
# A function's start: cuobjdump's "Function : name", nvdisasm's ".text.name:".
FUNC = re.compile(r"Function : (\S+)|^\.text\.([A-Za-z_]\w*):")


# cuobjdump's second line of an instruction: the high 64 bits of its 128,
# whose bits 41-44 are the stall count (the other control fields, the
# scoreboards and reuse flags, are above them).
HIGH = re.compile(r"^\s*/\* 0x([0-9a-f]{16}) \*/\s*$")


def read_listing(path):
    """[(function, [(address, instruction)], [stall of each instruction, or
    None where the listing has no control word])] in listing order."""
    funcs = []
    with open(path) as f:
        for line in f:
            m = FUNC.search(line)
            if m:
                funcs.append((m.group(1) or m.group(2), [], []))
                continue
            if not funcs:
                continue
            _, insns, stalls = funcs[-1]
            m = INSN.search(line)
            if m:
                insns.append((int(m.group(1), 16), m.group(2).strip()))
                stalls.append(None)
                continue
            m = HIGH.match(line)
            if m and stalls:
                stalls[-1] = int(m.group(1), 16) >> 41 & 15
    return funcs


def shape(insn):
    m = re.search(r"HGMMA\.(\d+x\d+x\d+)", insn)
    return m.group(1) if m else "?"


def cycles(stall, a, b):
    """Stall cycles from issuing instruction a to issuing b, or '?'."""
    part = stall[a:b]
    return "?" if None in part else str(sum(part))


def inner_loops(insns):
    """(head, back edge) index pairs of the innermost loops: a branch back
    to an earlier address whose span holds no other such span."""
    at = {a: i for i, (a, _) in enumerate(insns)}
    spans = []
    for i, (a, t) in enumerate(insns):
        m = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", t)
        target = int(m.group(1), 16) if m else a
        if target < a and target in at:
            spans.append((at[target], i))
    return [s for s in spans
            if not any(o != s and s[0] <= o[0] and o[1] <= s[1] for o in spans)]


def loop_table(insns, stall, hg):
    rows = [(h, e) for h, e in inner_loops(insns) if any(h <= i <= e for i in hg)]
    if not rows:
        return
    print("\n| loop at | instructions | wgmma | stall cycles a pass |")
    print("|---|---|---|---|")
    for h, e in rows:
        n = sum(1 for i in hg if h <= i <= e)
        print(f"| 0x{insns[h][0]:04x} | {e - h + 1} | {n} | {cycles(stall, h, e + 1)} |")


def report(name, insns, stall=None):
    hg = [i for i, (_, t) in enumerate(insns) if t.startswith("HGMMA")]
    groups, cur = [], []
    for i in hg:
        cur.append(i)
        if "gsb0" in insns[i][1]:
            groups.append(cur)
            cur = []
    if cur:
        groups.append(cur)
    ng = len(groups)
    print(f"## {name}: {len(insns)} instructions, {len(hg)} wgmma in {ng} group{'s' * (ng != 1)}\n")
    if not hg:
        return
    print("| group | at | wgmma | shape | instructions between issues |")
    print("|---|---|---|---|---|")
    for n, g in enumerate(groups, 1):
        gaps = " ".join(str(b - a - 1) for a, b in zip(g, g[1:])) or "-"
        print(f"| {n} | 0x{insns[g[0]][0]:04x} | {len(g)} | {shape(insns[g[0]][1])} | {gaps} |")
    waits = [i for i, (_, t) in enumerate(insns) if t.startswith("WARPGROUP.DEPBAR")]
    if waits:
        extra = " stall cycles to it |" if stall else ""
        print("\n| wait at | instructions to the next wgmma |" + extra)
        print("|---|---|" + ("---|" if stall else ""))
        for w in waits:
            nxt = next((i for i in hg if i > w), None)
            row = f"| 0x{insns[w][0]:04x} | {nxt - w - 1 if nxt is not None else '-'} |"
            if stall:
                row += f" {cycles(stall, w, nxt) if nxt is not None else '-'} |"
            print(row)
    if stall:
        loop_table(insns, stall, hg)
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("listing")
    ap.add_argument("--function", help="only this function")
    ap.add_argument("--cycles", action="store_true",
                    help="stall cycles from the control words, and the wgmma loops")
    args = ap.parse_args()
    funcs = read_listing(args.listing)
    if args.function:
        funcs = [f for f in funcs if f[0] == args.function]
    if not funcs:
        sys.exit(f"{args.listing}: no function" + (f" {args.function}" if args.function else ""))
    for name, insns, stalls in funcs:
        report(name, insns, stalls if args.cycles else None)


if __name__ == "__main__":
    main()
