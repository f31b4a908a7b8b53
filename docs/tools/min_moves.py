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

    binlake bench fleet -seed 4 -history-step 1m -json -truth > s4.json
    python3 docs/tools/min_moves.py s4.json
    python3 docs/tools/min_moves.py homogeneous.json 600
"""
import json
import math
import sys

import pulp


def main():
    rep = json.load(open(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "-" else sys.stdin)
    limit = float(sys.argv[2]) if len(sys.argv) > 2 else None
    tr = rep.get("truth")
    if not tr:
        sys.exit("min_moves: the report has no truth: run binlake bench fleet with -json -truth")
    waves, insts = tr["waves"], tr["instances"]
    om = 2 * math.pi / 24

    def at(c, h):
        return c[0] + c[1] * math.cos(om * h) + c[2] * math.sin(om * h)

    prob = pulp.LpProblem("min_moves", pulp.LpMinimize)
    x = [[pulp.LpVariable(f"x_{i}_{w}", cat="Binary") for w in range(len(waves))] for i in range(len(insts))]
    prob += pulp.lpSum(1 - x[i][inst["initial"]] for i, inst in enumerate(insts))
    for row in x:
        prob += pulp.lpSum(row) == 1
    for w, wave in enumerate(waves):
        cap = wave["cores"]

        def load(h):
            return wave["idle_cores"] + pulp.lpSum(at(inst["on"][w], h) * x[i][w] for i, inst in enumerate(insts))

        prob += load(tr["hour"]) <= tr["target_now"] * cap
        for k in range(96):
            prob += load(24 * k / 96) <= tr["target_day"] * cap
    prob.solve(pulp.PULP_CBC_CMD(msg=0, timeLimit=limit, threads=1))
    if prob.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        sys.exit(f"min_moves: no plan found ({pulp.LpSolution[prob.sol_status]})")
    worst = 0.0
    for w, wave in enumerate(waves):
        c = [wave["idle_cores"], 0.0, 0.0]
        for i, inst in enumerate(insts):
            if x[i][w].value() > 0.5:
                c = [a + b for a, b in zip(c, inst["on"][w])]
        worst = max(worst, at(c, tr["hour"]) / wave["cores"] / tr["target_now"],
                    (c[0] + math.hypot(c[1], c[2])) / wave["cores"] / tr["target_day"])
    moves = round(pulp.value(prob.objective))
    both = rep["both"]
    if prob.sol_status != pulp.LpSolutionOptimal:
        exact = "at most (the time limit stopped the solver before it proved the fewest)"
    elif worst <= 1 + 1e-9:
        exact = "exactly"
    else:
        exact = f"at least (the solution stands at {worst:.4f} of a target between the 96 hours)"
    print(f"seed {rep['seed']}: {exact} {moves} must move; lower bound {both['least_moves']}, "
          f"descent {both['descent']['moves_to_target']}, judge {both['judge_moves_to_target']} to the target")


if __name__ == "__main__":
    main()
