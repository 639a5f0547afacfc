#!/usr/bin/env python3
"""Summarize the rounds of `qualify calibrate` files (bench/h200/run.sh aa
and resolution write them): per file, how many rounds passed, ended
NO_DECISION or were read again, and how the speedups scatter, per round
and, under a version 9 policy, per read set.

    bench/h200/summarize.py OUT/aa.json OUT/resolution-minus1200.json ...

A calibration that a cut-off run never wrote can be summarized from its
log instead (the progress lines, rounded to six digits): pass the .log.
"""
import json
import math
import re
import statistics
import sys

ROUND = re.compile(r"round \d+/\d+: ")
SETS = re.compile(r"speedups ((?:×[\d.]+ ?)+);")
VERDICT = re.compile(r"\): (PASS|FAIL|NO_DECISION) (.*)$")


def rounds_of(path):
    """Each round as (decision, speedup, [set speedups], reread)."""
    if path.endswith(".json"):
        doc = json.load(open(path))
        return [(r["decision"], float(r["speedup"]), [float(x) for x in r.get("set_speedups", [])], bool(r.get("reread")))
                for r in doc["rounds"]]
    out = []
    for line in open(path):
        v = VERDICT.search(line)
        if not ROUND.search(line) or not v:
            continue
        s = SETS.search(line)
        sets = [float(x) for x in re.findall(r"×([\d.]+)", s.group(1))] if s else []
        speedup = re.search(r"(?:speedup|at) ([\d.]+)", v.group(2))
        out.append((v.group(1), float(speedup.group(1)) if speedup else float("nan"), sets, "read again after" in line))
    return out


def describe(xs):
    if len(xs) < 2:
        return "n/a"
    rms = math.sqrt(sum((x - 1) ** 2 for x in xs) / len(xs))
    return f"mean {statistics.mean(xs):.5f}, sd {100 * statistics.stdev(xs):.3f} %, rms about 1 {100 * rms:.3f} %"


for path in sys.argv[1:]:
    rs = rounds_of(path)
    if not rs:
        print(f"{path}: no rounds")
        continue
    count = {d: sum(1 for r in rs if r[0] == d) for d in ("PASS", "FAIL", "NO_DECISION")}
    decided = [r[1] for r in rs if r[0] != "NO_DECISION"]
    sets = [x for r in rs for x in r[2]]
    print(f"{path}: {len(rs)} rounds: {count['PASS']} PASS, {count['FAIL']} FAIL, {count['NO_DECISION']} NO_DECISION, "
          f"{sum(1 for r in rs if r[3])} read again")
    print(f"  round speedups (decided): {describe(decided)}; range {min(decided, default=float('nan')):.5f} – {max(decided, default=float('nan')):.5f}")
    if sets:
        per = len(sets) // len(rs)
        print(f"  set speedups ({len(sets)}, {per} a round): {describe(sets)}")
        rms = math.sqrt(sum((x - 1) ** 2 for x in sets) / len(sets))
        print(f"  a v9 calibration of these sets: min_margin = 3 × {100 * rms:.3f} % / √{per} = {300 * rms / math.sqrt(per):.3f} %")
