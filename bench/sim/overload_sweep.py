#!/usr/bin/env python3
"""Sweeps one tier knob over the overload cases (issue 25, bench/RESULTS.md "Issue 25, session 5").

For each value of TIER.KNOB it replays phalanx with a policy YAML that sets it (the other tiers
and knobs at the engine's defaults) and prints, per case: the critical+high mean, spot's mean and
p99, standard's p50, the GPU-weighted mean, preemptions per job and the issue's targets met
(overload.py's rules, against gang-binpack replayed once per case), then the total per value.

  bench/sim/overload_sweep.py --knob high.targetWaitSeconds --values 0 900 1800 3600 7200 -1
  bench/sim/overload_sweep.py --knob high.reserveAfterSeconds --values 0 3600 -1 --hints noisy
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overload  # noqa: E402  (the cases, the replay and the targets)

TIERS = overload.TIERS


def policy_yaml(knob, value, fixed):
    """The tiers with KNOB=value and every --set TIER.KEY=VALUE (the rest at the engine's defaults)."""
    keys = {t: {} for t in TIERS}
    for name, v in fixed + [(knob, value)]:
        tier, _, key = name.partition(".")
        keys[tier][key] = v
    return overload.tiers_yaml(keys)


def tier_key(text, what):
    tier, sep, key = text.partition(".")
    if tier not in TIERS or not sep or not key:
        sys.exit(f"overload_sweep.py: {what} {text}: expected TIER.KEY, TIER one of {', '.join(TIERS)}")
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(overload.ROOT, "build/cli/phalanx"))
    ap.add_argument("--knob", required=True, help="TIER.KEY, e.g. high.targetWaitSeconds")
    ap.add_argument("--values", nargs="+", required=True)
    ap.add_argument("--set", action="append", default=[], metavar="TIER.KEY=VALUE",
                    help="a fixed setting for every run (repeatable)")
    ap.add_argument("--cases", nargs="+", default=["llm:1", "llm:2", "llm:3", "fleet:1", "fleet:2", "fleet:3"])
    ap.add_argument("--hints", default="exact", choices=list(overload.HINTS))
    ap.add_argument("--misses", action="store_true", help="list the targets each run misses")
    args = ap.parse_args()
    tier_key(args.knob, "--knob")
    fixed = []
    for text in args.set:
        name, sep, value = text.partition("=")
        if not sep or not value:
            sys.exit(f"overload_sweep.py: --set {text}: expected TIER.KEY=VALUE")
        fixed.append((tier_key(name, "--set"), value))
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"overload_sweep.py: {args.binary} not built (cmake --build build --target phalanx)")
    slack = 1.25 if args.hints == "noisy" else 1.0
    extra = overload.HINTS[args.hints]
    totals = {v: [0, 0] for v in args.values}
    misses = []
    print(f"{args.knob} swept, hints {args.hints}" + "".join(f", {n}={v}" for n, v in fixed) + "\n")
    print("| case | value | crit+high mean | spot mean | spot p99 | standard p50 | GPU-weighted | preempt/job | targets |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases:
            name, scale, gb = overload.baseline(args.binary, case, extra, "overload_sweep.py")
            spot_gb = gb["tiers"].get("spot", {})
            print(f"| {name} x{scale} | gang-binpack | {overload.dur(overload.crit_high_mean(gb))} | "
                  f"{overload.dur(spot_gb.get('mean'))} | {overload.dur(spot_gb.get('p99'))} | "
                  f"{overload.dur(gb['tiers'].get('standard', {}).get('p50'))} | {overload.dur(gb['gpu_weighted'])} | "
                  f"0.000 | |")
            for v in args.values:
                path = os.path.join(tmp, "policy.yaml")
                with open(path, "w") as f:
                    f.write(policy_yaml(args.knob, v, fixed))
                (p,) = overload.simulate(args.binary, overload.CASES[name], scale, "phalanx",
                                         extra + ["--scheduling-policy", path])
                s = overload.summary(p)
                res = overload.targets(s, gb, slack)
                met = sum(1 for _, ok, _ in res if ok)
                misses.append(f"{name} x{scale} {v}: " + "; ".join(f"{n} ({t})" for n, ok, t in res if not ok))
                totals[v][0] += met
                totals[v][1] += len(res)
                spot = s["tiers"].get("spot", {})
                print(f"| {name} x{scale} | {v} | {overload.dur(overload.crit_high_mean(s))} | {overload.dur(spot.get('mean'))} | "
                      f"{overload.dur(spot.get('p99'))} | {overload.dur(s['tiers'].get('standard', {}).get('p50'))} | "
                      f"{overload.dur(s['gpu_weighted'])} | {s['preempt_per_job']:.3f} | {met}/{len(res)} |", flush=True)
    if args.misses:
        print("\nMissed:\n" + "\n".join(misses))
    print("\n| value | targets met |\n|---|---|")
    for v, (met, n) in totals.items():
        print(f"| {v} | {met}/{n} |")


if __name__ == "__main__":
    main()
