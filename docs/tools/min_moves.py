#!/usr/bin/env python3
"""The fewest moves that bring a simulated fleet within its targets, exactly.

Reads the JSON report of `binlake bench fleet -json -truth` (a file, or stdin) and solves,
as an integer programme (PuLP and its bundled CBC: pip install pulp), the least number of
instances that must change wave from the initial assignment for every wave to stand
within the target now and within the daily target at each of 96 hours of the day. The
solution is then checked against each wave's continuous daily peak; when it holds, the
count is the exact minimum (the 96 hours only relax the daily peak). Prints it beside
the report's lower bound, the descent reference's count and the judge's. A second
argument bounds the solver's time in seconds (none by default): stopped by it, the count
is only a plan's that reaches the targets, an upper bound of the minimum.

--max-utilisation U holds the targets to U as well, the judge's rebalance.max_utilisation
(0.7 by default): where a target stands above it, the judge's plans keep every wave under
U all the same, and what must move for them is what brings the waves within both. The
judge's count is then replayed from the report's moves to the same held targets.

--within R holds the fleet to R times the greedy reference instead of the report's 1.10
(TargetFactor): the targets scaled by R / 1.10. The judge's plans keep a margin under
1.10 against their predictions' error (their lines stand at 1.08 times the fleet's
level, near the greedy peak, as they predict it); what exactly reaching R needs says how
many moves such a margin takes.

    binlake bench fleet -seed 4 -history-step 1m -json -truth > s4.json
    python3 docs/tools/min_moves.py s4.json
    python3 docs/tools/min_moves.py homogeneous.json 600
    python3 docs/tools/min_moves.py --max-utilisation 0.7 s3.json
    python3 docs/tools/min_moves.py --within 1.08 s4.json 300
"""
import argparse
import json
import math
import sys

import pulp

OMEGA = 2 * math.pi / 24

# TARGET_FACTOR is the report's targets over the greedy reference's peaks (the fleet
# simulator's TargetFactor).
TARGET_FACTOR = 1.10


def at(c, h):
    """A load's cores at hour h (its mean and diurnal cosine and sine parts)."""
    return c[0] + c[1] * math.cos(OMEGA * h) + c[2] * math.sin(OMEGA * h)


def judge_to_target(rep, target_now, target_day):
    """After how many of the report's moves, replayed from the initial assignment, every
    wave first stood within both targets (its true utilisation now, and at its daily
    peak); -1 when never."""
    tr = rep["truth"]
    waves, insts = tr["waves"], tr["instances"]
    inst = {x["id"]: i for i, x in enumerate(insts)}
    wave = {w["node"]: i for i, w in enumerate(waves)}
    assign = [x["initial"] for x in insts]

    def within():
        for w, wv in enumerate(waves):
            c = [wv["idle_cores"], 0.0, 0.0]
            for i, a in enumerate(assign):
                if a == w:
                    c = [p + q for p, q in zip(c, insts[i]["on"][w])]
            if at(c, tr["hour"]) > target_now * wv["cores"] + 1e-12:
                return False
            if c[0] + math.hypot(c[1], c[2]) > target_day * wv["cores"] + 1e-12:
                return False
        return True

    n = 0
    if within():
        return 0
    for rd in rep.get("rounds", []):
        for iid, to in zip(rd["moved_instances"], rd["moved_to"]):
            assign[inst[iid]] = wave[to]
            n += 1
            if within():
                return n
    return -1


def main():
    ap = argparse.ArgumentParser(description="The fewest moves that bring a simulated fleet within its targets, exactly.")
    ap.add_argument("report", nargs="?", default="-", help="the JSON report of binlake bench fleet -json -truth (- or none: stdin)")
    ap.add_argument("limit", nargs="?", type=float, help="the solver's time limit in seconds (none: until it proves the fewest)")
    ap.add_argument("--max-utilisation", type=float, metavar="U",
                    help="hold the targets to U too, as the judge's rebalance.max_utilisation holds its plans")
    ap.add_argument("--within", type=float, metavar="R",
                    help=f"hold the fleet to R times the greedy reference instead of {TARGET_FACTOR}")
    args = ap.parse_args()
    if args.within is not None and not args.within >= 1:
        sys.exit(f"min_moves: --within {args.within}: want a factor on the greedy reference's peak of at least 1")
    if args.max_utilisation is not None and not args.max_utilisation > 0:
        sys.exit(f"min_moves: --max-utilisation {args.max_utilisation}: want a share of the cores above 0")
    rep = json.load(open(args.report) if args.report != "-" else sys.stdin)
    limit = args.limit
    tr = rep.get("truth")
    if not tr:
        sys.exit("min_moves: the report has no truth: run binlake bench fleet with -json -truth")
    waves, insts = tr["waves"], tr["instances"]
    target_now, target_day = tr["target_now"], tr["target_day"]
    if args.within is not None:
        target_now, target_day = target_now * args.within / TARGET_FACTOR, target_day * args.within / TARGET_FACTOR
    if args.max_utilisation is not None:
        target_now, target_day = min(target_now, args.max_utilisation), min(target_day, args.max_utilisation)

    prob = pulp.LpProblem("min_moves", pulp.LpMinimize)
    x = [[pulp.LpVariable(f"x_{i}_{w}", cat="Binary") for w in range(len(waves))] for i in range(len(insts))]
    prob += pulp.lpSum(1 - x[i][inst["initial"]] for i, inst in enumerate(insts))
    for row in x:
        prob += pulp.lpSum(row) == 1
    for w, wave in enumerate(waves):
        cap = wave["cores"]

        def load(h):
            return wave["idle_cores"] + pulp.lpSum(at(inst["on"][w], h) * x[i][w] for i, inst in enumerate(insts))

        prob += load(tr["hour"]) <= target_now * cap
        for k in range(96):
            prob += load(24 * k / 96) <= target_day * cap
    prob.solve(pulp.PULP_CBC_CMD(msg=0, timeLimit=limit, threads=1))
    if prob.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        sys.exit(f"min_moves: no plan found ({pulp.LpSolution[prob.sol_status]})")
    worst = 0.0
    for w, wave in enumerate(waves):
        c = [wave["idle_cores"], 0.0, 0.0]
        for i, inst in enumerate(insts):
            if x[i][w].value() > 0.5:
                c = [a + b for a, b in zip(c, inst["on"][w])]
        worst = max(worst, at(c, tr["hour"]) / wave["cores"] / target_now,
                    (c[0] + math.hypot(c[1], c[2])) / wave["cores"] / target_day)
    moves = round(pulp.value(prob.objective))
    both = rep["both"]
    if prob.sol_status != pulp.LpSolutionOptimal:
        exact = "at most (the time limit stopped the solver before it proved the fewest)"
    elif worst <= 1 + 1e-9:
        exact = "exactly"
    else:
        exact = f"at least (the solution stands at {worst:.4f} of a target between the 96 hours)"
    if args.within is not None and args.max_utilisation is None:
        print(f"seed {rep['seed']}: {exact} {moves} must move to within {args.within:g}× the greedy reference "
              f"(now {target_now:.4f}, by the day {target_day:.4f}); judge {judge_to_target(rep, target_now, target_day)} "
              f"to them ({both['judge_moves_to_target']} to the report's {TARGET_FACTOR}×; -1: never)")
        return
    if args.max_utilisation is None:
        print(f"seed {rep['seed']}: {exact} {moves} must move; lower bound {both['least_moves']}, "
              f"descent {both['descent']['moves_to_target']}, judge {both['judge_moves_to_target']} to the target")
        return
    held = target_now < tr["target_now"] or target_day < tr["target_day"]
    print(f"seed {rep['seed']}: {exact} {moves} must move to the targets held to {args.max_utilisation:g} "
          f"(now {target_now:.4f}, by the day {target_day:.4f}{'' if held else ': neither was above it'}); "
          f"judge {judge_to_target(rep, target_now, target_day)} to them "
          f"({both['judge_moves_to_target']} to the report's targets)")


if __name__ == "__main__":
    main()
