#!/usr/bin/env python3
"""Where a kernel waits, from the SASS listing that bench/tools/ncu_source.sh
writes (ncu --page source --csv --print-source sass): the stall reasons'
shares, the samples of each kind of wait, and the instructions with the most
samples, each with its two main reasons.

    python3 bench/tools/stall_report.py LISTING.csv [--lines A-B] [--top N]

--lines keeps listing rows A to B (1 = the first instruction), e.g. one
warpgroup role's code, found by reading the listing. A wait is named by what
the warp waits at: the branch back to an mbarrier try_wait ("mbarrier wait",
with the try_wait's address), a WARPGROUP.DEPBAR ("wgmma wait"), a BAR.SYNC
("named barrier"); every other instruction by its opcode."""
import argparse
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
WAITS = ("mbarrier wait", "wgmma wait", "named barrier")


def read_listing(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    start = next(i for i, r in enumerate(rows) if SAMPLES in r)  # the header row
    head = rows[start]
    col = {h: i for i, h in enumerate(head)}
    reasons = [h for h in head if h.startswith("stall_") and "Not Issued" not in h]
    out = []
    for r in rows[start + 1:]:
        if len(r) < len(head):
            continue
        out.append({
            "source": r[col["Source"]].strip(),
            "samples": int(r[col[SAMPLES]] or 0),
            "reasons": {k[len("stall_"):]: int(r[col[k]] or 0) for k in reasons},
        })
    return out


def predicate(src):
    """The predicate register a branch tests: '@!P0  BRA ...' -> 'P0'."""
    return src.split()[0].lstrip("@!") if src.startswith("@") else None


def kind(rows, i):
    """What the warp waits at in row i, and on what. A predicated branch is
    an mbarrier wait when a try_wait in the 64 rows above it writes its
    predicate (ptxas schedules other instructions between the two)."""
    src = rows[i]["source"]
    op = src.split()[1] if src.startswith("@") else src.split()[0]
    pred = predicate(src)
    if op.startswith("BRA") and pred:
        for j in range(i - 1, max(-1, i - 65), -1):
            prev = rows[j]["source"]
            if "SYNCS.PHASECHK" in prev and f" {pred}," in prev:
                return "mbarrier wait", prev.split("[", 1)[-1].split("]")[0]
    if op.startswith("WARPGROUP.DEPBAR"):
        return "wgmma wait", ""
    if op.startswith("BAR.SYNC"):
        return "named barrier", src.split(None, 1)[1] if " " in src else ""
    return op.split(".")[0], ""


def report(rows, top, first=1):
    total = sum(r["samples"] for r in rows)
    print(f"{total} samples over {len(rows)} instructions\n")
    if total == 0:
        return
    print("| reason | samples | share |\n|---|--:|--:|")
    sums = {}
    for r in rows:
        for k, v in r["reasons"].items():
            sums[k] = sums.get(k, 0) + v
    for k, v in sorted(sums.items(), key=lambda kv: (-kv[1], kv[0]))[:10]:
        if v:
            print(f"| {k} | {v} | {100 * v / total:.1f} % |")
    print("\n| waits at | samples | share |\n|---|--:|--:|")
    waits = {}
    for r in rows:
        k = r["kind"]
        if k in WAITS:
            waits[k] = waits.get(k, 0) + r["samples"]
    for k, v in sorted(waits.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"| {k} | {v} | {100 * v / total:.1f} % |")
    print("\n| row | samples | share | instruction | main reasons |\n|--:|--:|--:|---|---|")
    order = sorted(range(len(rows)), key=lambda i: (-rows[i]["samples"], i))[:top]
    for i in order:
        r = rows[i]
        if not r["samples"]:
            break
        k, on = r["kind"], r["on"]
        what = r["source"]
        if k in WAITS:
            what = f"{k} [{on}]" if on else k
        main = sorted(((v, k2) for k2, v in r["reasons"].items() if v), reverse=True)[:2]
        print(f"| {i + first} | {r['samples']} | {100 * r['samples'] / total:.1f} % | `{what}` | "
              + ", ".join(f"{k2} {v}" for v, k2 in main) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("listing")
    ap.add_argument("--lines", help="A-B: listing rows A to B only (1-based)")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    rows = read_listing(a.listing)
    for i, r in enumerate(rows):  # on the whole listing: a wait's try_wait may lie outside --lines
        r["kind"], r["on"] = kind(rows, i)
    first = 1
    if a.lines:
        try:
            lo, hi = (int(x) for x in a.lines.split("-"))
        except ValueError:
            sys.exit(f"--lines {a.lines}: want A-B, two row numbers")
        if not 1 <= lo <= hi:
            sys.exit(f"--lines {a.lines}: want 1 <= A <= B")
        rows, first = rows[lo - 1:hi], lo
    report(rows, a.top, first)


if __name__ == "__main__":
    main()
