#!/usr/bin/env python3
"""Summarize the rounds of `qualify calibrate` files (bench/h200/run.sh aa
and resolution write them): per file, how many rounds passed, ended
NO_DECISION or were read again, and how the speedups scatter, per round
and per read set (a version 8 round is one set: C over the mean of B and
B′; a version 9 round records each of its sets).

    bench/h200/summarize.py [--sets K --bar X] FILE...

With --sets and --bar, it also says what share of every choice of K of a
file's read sets has a mean speedup at or above X: how a version 9 grade
of K sets with min_margin X − 1 would decide sets like these.

A calibration that a cut-off run never wrote can be summarized from its
log instead (the progress lines, rates rounded to six digits): pass the
.log.
"""
import argparse
import itertools
import json
import math
import re
import statistics

ROUND = re.compile(r"round \d+/\d+: B ([\d.]+) C ([\d.]+) B′ ([\d.]+) ")
SETS = re.compile(r"speedups ((?:×[\d.]+ ?)+);")
VERDICT = re.compile(r"(?:\)|tok/s): (PASS|FAIL|NO_DECISION) (.*)$")


def rounds_of(path):
    """Each round as (decision, speedup, [set speedups], read again)."""
    out = []
    if path.endswith(".json"):
        for r in json.load(open(path))["rounds"]:
            b, c, bp = float(r["b"]), float(r["c"]), float(r["b_prime"])
            sets = [float(x) for x in r.get("set_speedups", [])] or [c / ((b + bp) / 2)]
            out.append((r["decision"], float(r["speedup"]), sets, bool(r.get("reread"))))
        return out
    for line in open(path):
        m, v = ROUND.search(line), VERDICT.search(line)
        if not m or not v:
            continue
        b, c, bp = map(float, m.groups())
        s = SETS.search(line)
        sets = [float(x) for x in re.findall(r"×([\d.]+)", s.group(1))] if s else [c / ((b + bp) / 2)]
        speedup = re.search(r"(?:speedup|at) ([\d.]+)", v.group(2))
        out.append((v.group(1), float(speedup.group(1)) if speedup else float("nan"), sets, "read again after" in line))
    return out


def describe(xs):
    if len(xs) < 2:
        return "n/a"
    rms = math.sqrt(sum((x - 1) ** 2 for x in xs) / len(xs))
    return f"mean {statistics.mean(xs):.5f}, sd {100 * statistics.stdev(xs):.3f} %, rms about 1 {100 * rms:.3f} %, range {min(xs):.5f} – {max(xs):.5f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=int, help="K: grade every choice of K read sets on their mean")
    ap.add_argument("--bar", type=float, help="X: the mean speedup a choice must reach (1 + min_margin)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    for path in a.files:
        rs = rounds_of(path)
        if not rs:
            print(f"{path}: no rounds")
            continue
        count = {d: sum(1 for r in rs if r[0] == d) for d in ("PASS", "FAIL", "NO_DECISION")}
        decided = [r[1] for r in rs if r[0] != "NO_DECISION"]
        sets = [x for r in rs for x in r[2]]
        # A file a run cut short wrote holds fewer rounds than it asked for.
        asked = json.load(open(path)).get("rounds_asked", 0) if path.endswith(".json") else 0
        short = f" (cut short: {asked} asked)" if asked > len(rs) else ""
        print(f"{path}: {len(rs)} rounds{short}: {count['PASS']} PASS, {count['FAIL']} FAIL, {count['NO_DECISION']} NO_DECISION, "
              f"{sum(1 for r in rs if r[3])} read again")
        print(f"  round speedups (decided): {describe(decided)}")
        print(f"  set speedups ({len(sets)}): {describe(sets)}")
        if a.sets and a.bar and len(sets) >= a.sets:
            choices = list(itertools.combinations(sets, a.sets))
            passing = sum(1 for c in choices if statistics.mean(c) >= a.bar)
            print(f"  of the {len(choices)} choices of {a.sets} sets, {passing} ({100 * passing / len(choices):.2f} %) have a mean of at least {a.bar}")


if __name__ == "__main__":
    main()
