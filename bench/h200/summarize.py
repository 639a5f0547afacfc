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

A version 9 grade drops a set whose B and B′ differ by more than
max_noise, and the round's speedup is the mean of the kept sets. Files
record which sets were kept (sets_kept) and logs mark a dropped one
"(dropped)"; for a file or log written before they did, a round whose
speedup is not the mean of all its sets is counted as one that dropped
the set whose leaving out gives its speedup.
"""
import argparse
import itertools
import json
import math
import re
import statistics

ROUND = re.compile(r"round \d+/\d+: B ([\d.]+) C ([\d.]+) B′ ([\d.]+) ")
SETS = re.compile(r"speedups ((?:×[\d.]+(?: \(dropped\))? ?)+);")
VERDICT = re.compile(r"(?:\)|tok/s): (PASS|FAIL|NO_DECISION) (.*)$")


def kept_sets(sets, speedup, kept, tolerance):
    """Which sets the round's grade kept: as recorded, else all of them if
    their mean is the speedup, else all but the one whose leaving out
    gives it (None when no such set is found)."""
    if kept:
        return kept
    if len(sets) < 2 or abs(statistics.mean(sets) - speedup) <= tolerance:
        return [True] * len(sets)
    for i in range(len(sets)):
        if abs(statistics.mean(sets[:i] + sets[i + 1:]) - speedup) <= tolerance:
            return [k != i for k in range(len(sets))]
    return None


def rounds_of(path):
    """Each round as (decision, speedup, [set speedups], read again, [kept])."""
    out = []
    if path.endswith(".json"):
        for r in json.load(open(path))["rounds"]:
            b, c, bp = float(r["b"]), float(r["c"]), float(r["b_prime"])
            sets = [float(x) for x in r.get("set_speedups", [])] or [c / ((b + bp) / 2)]
            speedup = float(r["speedup"])
            kept = kept_sets(sets, speedup, r.get("sets_kept"), 1e-12)
            out.append((r["decision"], speedup, sets, bool(r.get("reread")), kept))
        return out
    for line in open(path):
        m, v = ROUND.search(line), VERDICT.search(line)
        if not m or not v:
            continue
        b, c, bp = map(float, m.groups())
        s = SETS.search(line)
        marks = re.findall(r"×([\d.]+)( \(dropped\))?", s.group(1)) if s else []
        sets = [float(x) for x, _ in marks] or [c / ((b + bp) / 2)]
        speedup = re.search(r"(?:speedup|at) ([\d.]+)", v.group(2))
        speedup = float(speedup.group(1)) if speedup else float("nan")
        recorded = [not d for _, d in marks] if any(d for _, d in marks) else None
        # The log rounds set speedups to six significant digits.
        kept = kept_sets(sets, speedup, recorded, 2e-5)
        out.append((v.group(1), speedup, sets, "read again after" in line, kept))
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
        dropped = [r for r in rs if r[4] is not None and not all(r[4])]
        unknown = sum(1 for r in rs if r[4] is None)
        if dropped or unknown:
            n = sum(r[4].count(False) for r in dropped)
            print(f"  rounds that dropped a set for B/B′ drift over max_noise: {len(dropped)} ({n} sets)"
                  + (f"; {unknown} rounds' speedups are the mean of no subset found" if unknown else ""))
        print(f"  round speedups (decided): {describe(decided)}")
        print(f"  set speedups ({len(sets)}): {describe(sets)}")
        if dropped:
            kept = [x for r in rs if r[4] is not None for x, k in zip(r[2], r[4]) if k]
            print(f"  kept set speedups ({len(kept)}): {describe(kept)}")
        if a.sets and a.bar and len(sets) >= a.sets:
            choices = list(itertools.combinations(sets, a.sets))
            passing = sum(1 for c in choices if statistics.mean(c) >= a.bar)
            print(f"  of the {len(choices)} choices of {a.sets} sets, {passing} ({100 * passing / len(choices):.2f} %) have a mean of at least {a.bar}")


if __name__ == "__main__":
    main()
