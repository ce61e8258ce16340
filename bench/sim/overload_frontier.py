#!/usr/bin/env python3
"""The top tiers' service against spot's, policy by policy (issue 25, bench/RESULTS.md
"Issue 25, session 6").

Replays each overload case under a fixed set of policy variants, from the defaults to every
top-tier rule off, and prints per case and variant: the critical+high mean wait, spot's mean,
p50 and p99 as multiples of gang-binpack's, the GPU-weighted mean against gang-binpack's,
preemptions per job and the issue's targets met (overload.py's rules). The variants move
along one axis: how much the top tiers may take from the tiers below (preempt at once, after
30 min, never; reserve their pool or not), so the table is the trade-off between the
critical+high target and spot's targets.

  bench/sim/overload_frontier.py                      # six cases, exact hints (~2 min)
  bench/sim/overload_frontier.py --hints noisy --cases llm:3
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overload  # noqa: E402  (the cases, the replay and the targets)

# name -> {tier: {key: value}}: the rest at the engine's defaults (tier_policy.cc).
VARIANTS = {
    "defaults": {},
    "high waits 30m": {"high": {"targetWaitSeconds": 1800}},
    "high never preempts": {"high": {"targetWaitSeconds": -1}},
    "top never preempt": {"critical": {"targetWaitSeconds": -1}, "high": {"targetWaitSeconds": -1}},
    "top never reserve": {"critical": {"reserveAfterSeconds": -1}, "high": {"reserveAfterSeconds": -1}},
    "top rules off": {"critical": {"targetWaitSeconds": -1, "reserveAfterSeconds": -1},
                      "high": {"targetWaitSeconds": -1, "reserveAfterSeconds": -1}},
}


def ratio(a, b):
    if b <= 1:
        return "0s" if a <= 1 else f"{overload.dur(a)} vs 0s"
    return f"{a / b:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(overload.ROOT, "build/cli/phalanx"))
    ap.add_argument("--cases", nargs="+", default=["llm:1", "llm:2", "llm:3", "fleet:1", "fleet:2", "fleet:3"])
    ap.add_argument("--hints", default="exact", choices=list(overload.HINTS))
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--conflicts", action="store_true",
                    help="for each target the defaults miss, the variants that meet it (none: no knob here helps)")
    args = ap.parse_args()
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"overload_frontier.py: {args.binary} not built (cmake --build build --target phalanx)")
    slack = 1.25 if args.hints == "noisy" else 1.0
    extra = overload.HINTS[args.hints]
    totals = {v: [0, 0, 0, 0] for v in args.variants}  # targets met, targets, spot targets met, spot targets
    met_by = {}  # (case, target) -> {variant: ok}
    print(f"hints {args.hints}\n")
    print("| case | variant | crit+high mean | spot mean | spot p50 | spot p99 | GPU-weighted | preempt/job | targets |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases:
            name, scale, gb = overload.baseline(args.binary, case, extra, "overload_frontier.py")
            sg = gb["tiers"].get("spot", {"mean": 0, "p50": 0, "p99": 0})
            print(f"| {name} x{scale} | gang-binpack | {overload.dur(overload.crit_high_mean(gb))} | "
                  f"{overload.dur(sg['mean'])} | {overload.dur(sg['p50'])} | {overload.dur(sg['p99'])} | "
                  f"{overload.dur(gb['gpu_weighted'])} | 0.000 | |")
            for v in args.variants:
                path = os.path.join(tmp, "policy.yaml")
                with open(path, "w") as f:
                    f.write(overload.tiers_yaml(VARIANTS[v]))
                (p,) = overload.simulate(args.binary, overload.CASES[name], scale, "phalanx",
                                         extra + ["--scheduling-policy", path])
                s = overload.summary(p)
                res = overload.targets(s, gb, slack)
                met = sum(1 for _, ok, _ in res if ok)
                for tname, ok, text in res:
                    met_by.setdefault((f"{name} x{scale}", tname), {})[v] = (ok, text)
                spot_res = [ok for n, ok, _ in res if n.startswith("spot ")]
                t = totals[v]
                t[0] += met
                t[1] += len(res)
                t[2] += sum(spot_res)
                t[3] += len(spot_res)
                sp = s["tiers"].get("spot", {"mean": 0, "p50": 0, "p99": 0})
                print(f"| {name} x{scale} | {v} | {overload.dur(overload.crit_high_mean(s))} | {ratio(sp['mean'], sg['mean'])} | "
                      f"{ratio(sp['p50'], sg['p50'])} | {ratio(sp['p99'], sg['p99'])} | "
                      f"{s['gpu_weighted'] / gb['gpu_weighted']:.3f}x | {s['preempt_per_job']:.3f} | {met}/{len(res)} |",
                      flush=True)
    if args.conflicts and "defaults" in args.variants:
        print("\n| case | target the defaults miss | defaults | variants that meet it |\n|---|---|---|---|")
        for (case, tname), by in met_by.items():
            if by["defaults"][0]:
                continue
            meeting = [v for v, (ok, _) in by.items() if ok]
            print(f"| {case} | {tname} | {by['defaults'][1]} | {', '.join(meeting) if meeting else 'none'} |")
    print("\n| variant | targets met | spot's targets met |\n|---|---|---|")
    for v, (met, n, smet, sn) in totals.items():
        print(f"| {v} | {met}/{n} | {smet}/{sn} |")


if __name__ == "__main__":
    main()
