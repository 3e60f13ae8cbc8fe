#!/usr/bin/env python3
"""How closely a kernel issues its wgmma, from its SASS listing
(`cuobjdump -sass CUBIN` or `nvdisasm -c CUBIN`, saved to a file).

    python3 bench/tools/wgmma_gaps.py LISTING [--function NAME]

For each function: its instruction count, then each wgmma group (the
HGMMAs up to the one that commits them, marked gsb0) with the number of
instructions between one HGMMA's issue and the next, and each wgmma wait
(WARPGROUP.DEPBAR) with the instructions from it to the next HGMMA. A warp
issues in order, so an HGMMA waits for everything placed before it: long
gaps inside a group, or between a wait and the next product, are where the
tensor pipe may idle (docs/generic.md, "What the state warpgroup's machine
code shows")."""
import argparse
import re
import sys

# One instruction: its address in a /*...*/ comment, then the text up to ';'.
INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);")
# A function's start: cuobjdump's "Function : name", nvdisasm's ".text.name:".
FUNC = re.compile(r"Function : (\S+)|^\.text\.([A-Za-z_]\w*):")


def read_listing(path):
    """[(function, [(address, instruction)])] in listing order."""
    funcs = []
    with open(path) as f:
        for line in f:
            m = FUNC.search(line)
            if m:
                funcs.append((m.group(1) or m.group(2), []))
                continue
            m = INSN.search(line)
            if m and funcs:
                funcs[-1][1].append((int(m.group(1), 16), m.group(2).strip()))
    return funcs


def shape(insn):
    m = re.search(r"HGMMA\.(\d+x\d+x\d+)", insn)
    return m.group(1) if m else "?"


def report(name, insns):
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
        print("\n| wait at | instructions to the next wgmma |")
        print("|---|---|")
        for w in waits:
            nxt = next((i for i in hg if i > w), None)
            print(f"| 0x{insns[w][0]:04x} | {nxt - w - 1 if nxt is not None else '-'} |")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("listing")
    ap.add_argument("--function", help="only this function")
    args = ap.parse_args()
    funcs = read_listing(args.listing)
    if args.function:
        funcs = [f for f in funcs if f[0] == args.function]
    if not funcs:
        sys.exit(f"{args.listing}: no function" + (f" {args.function}" if args.function else ""))
    for name, insns in funcs:
        report(name, insns)


if __name__ == "__main__":
    main()
