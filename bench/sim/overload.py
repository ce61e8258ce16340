#!/usr/bin/env python3
"""Replays overloaded workloads with every policy side by side (issue 25, bench/RESULTS.md
"Issue 25: policy under overload").

For each case (cluster, trace, --time-scale, hint mode) it runs `phalanx simulate --json`
once with the policies asked for and prints, per policy: per-tier mean / p50 / p99 / max
queueing, the GPU-weighted mean, makespan, preemptions per job, lost work (% of used
GPU-hours) and hint overruns; then the issue's targets for `phalanx` against
`gang-binpack` (ratios; a target that does not hold is marked MISS).

  bench/sim/overload.py                       # the default cases (about a minute)
  bench/sim/overload.py --cases llm:2 fleet:3 --hints noisy
  bench/sim/overload.py --variant reserve=-1:/tmp/policy.yaml   # an extra phalanx run

A variant NAME:FILE replays phalanx again with `--scheduling-policy FILE` (knob sweeps).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = {
    "llm": ("sim/data/llm-cluster.yaml", "sim/data/llm-mix.csv", "phalanx"),
    "fleet": ("sim/data/fleet-cluster.yaml", "sim/data/fleet-mix.csv", "phalanx"),
    "two-team": ("sim/data/two-team-cluster.yaml", "sim/data/two-team-mix.csv", "phalanx"),
    "demo": ("sim/data/demo-cluster.yaml", "sim/data/philly-demo.csv", "philly"),
    "gang-mix": ("sim/data/demo-cluster.yaml", "sim/data/gang-mix.csv", "phalanx"),
}
HINTS = {"exact": [], "noisy": ["--hint-noise", "1,3"], "none": ["--no-duration-hints"]}
TIERS = ["critical", "high", "standard", "spot"]


def dur(s):
    if s is None:
        return "-"
    if s < 90:
        return f"{s:.0f}s"
    if s < 5400:
        return f"{s / 60:.1f}m"
    if s < 2 * 86400:
        return f"{s / 3600:.1f}h"
    return f"{s / 86400:.1f}d"


def simulate(binary, case, scale, policies, extra):
    cluster, trace, fmt = case
    cmd = [binary, "simulate", "--cluster", cluster, "--trace", trace, "--trace-format", fmt, "--policy", policies,
           "--time-scale", str(scale), "--seed", "1", "--json", "--quiet"] + extra
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["policies"]


def summary(p):
    tiers = {t["tier"]: t for t in p["tiers"]}
    used = sum(t["gpuHours"] for t in p["tiers"]) or 1
    return {
        "tiers": {n: t["queueingDelaySeconds"] for n, t in tiers.items() if t["queueingDelaySeconds"]["count"]},
        "gpu_weighted": p["gpuWeightedQueueingDelaySeconds"],
        "makespan": p["makespanSeconds"],
        "preempt_per_job": p["preemptionsPerJob"],
        "lost_pct": 100 * p["lostGpuHours"] / used,
        "overruns": p.get("hintOverruns", 0),
        "deadlocked": p["deadlockedGangs"],
        "unfinished": p["unfinished"],
    }


def crit_high_mean(s):
    """The critical and high tiers' mean queueing together (a summary() of one run)."""
    qs = [s["tiers"][t] for t in ("critical", "high") if t in s["tiers"]]
    n = sum(q["count"] for q in qs)
    return sum(q["mean"] * q["count"] for q in qs) / n if n else 0


def tiers_yaml(keys):
    """A `scheduling:` policy setting {tier: {key: value}} over the engine's defaults."""
    lines = ["scheduling:", "  tiers:"]
    for t in TIERS:  # a `tiers:` list replaces the defaults' list: name every tier
        kv = keys.get(t, {})
        lines.append("    - {" + ", ".join([f"name: {t}"] + [f"{k}: {v}" for k, v in kv.items()]) + "}")
    return "\n".join(lines) + "\n"


def baseline(binary, case, extra, tool):
    """Parses NAME:SCALE and replays gang-binpack on it: (name, scale, its summary)."""
    name, _, scale = case.partition(":")
    if name not in CASES:
        sys.exit(f"{tool}: --cases {case}: NAME one of {', '.join(CASES)}")
    (gb,) = simulate(binary, CASES[name], scale, "gang-binpack", extra)
    return name, scale, summary(gb)


def targets(ph, gb, slack):
    """The issue's targets for phalanx against gang-binpack: [(name, ok, text)]."""
    out = []
    for tier, q in ph["tiers"].items():
        b = gb["tiers"].get(tier)
        if not b:
            continue
        for stat, bound in (("mean", 1.1), ("p50", 1.1), ("p99", 1.0)):
            limit = bound * slack * b[stat]
            ok = q[stat] <= limit + 1  # a second of slack: 0 s vs 0 s
            out.append((f"{tier} {stat}", ok, f"{dur(q[stat])} vs {dur(b[stat])}"))
    crit_high = [ph["tiers"][t] for t in ("critical", "high") if t in ph["tiers"]]
    if crit_high:
        n = sum(q["count"] for q in crit_high)
        mean = sum(q["mean"] * q["count"] for q in crit_high) / n
        out.append(("critical+high mean <= 60s", mean <= 60 * slack, dur(mean)))
    out.append(("GPU-weighted mean", ph["gpu_weighted"] <= slack * gb["gpu_weighted"] + 1,
                f"{dur(ph['gpu_weighted'])} vs {dur(gb['gpu_weighted'])}"))
    out.append(("makespan <= 1.02x", ph["makespan"] <= 1.02 * slack * gb["makespan"],
                f"{ph['makespan'] / gb['makespan']:.3f}x"))
    out.append(("preemptions <= 0.2/job", ph["preempt_per_job"] <= 0.2 * slack, f"{ph['preempt_per_job']:.3f}"))
    out.append(("lost work <= 0.5%", ph["lost_pct"] <= 0.5 * slack, f"{ph['lost_pct']:.2f}%"))
    out.append(("no deadlock, all finish", ph["deadlocked"] == 0 and ph["unfinished"] == 0,
                f"{ph['deadlocked']} deadlocked, {ph['unfinished']} unfinished"))
    return out


def print_case(title, runs, slack):
    print(f"\n## {title}")
    names = list(runs)
    print("| | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for tier in TIERS:
        if not any(tier in runs[n]["tiers"] for n in names):
            continue
        cells = []
        for n in names:
            q = runs[n]["tiers"].get(tier)
            cells.append("-" if not q else f"{dur(q['mean'])} ({dur(q['p50'])}) p99 {dur(q['p99'])} max {dur(q['max'])}")
        print(f"| {tier} mean (p50) | " + " | ".join(cells) + " |")
    for label, key, fmt in (("GPU-weighted mean", "gpu_weighted", dur), ("makespan", "makespan", dur),
                            ("preemptions/job", "preempt_per_job", lambda v: f"{v:.3f}"),
                            ("lost work", "lost_pct", lambda v: f"{v:.2f}%"),
                            ("hint overruns", "overruns", str)):
        print(f"| {label} | " + " | ".join(fmt(runs[n][key]) for n in names) + " |")
    if "gang-binpack" in runs:
        for n in names:
            if not n.startswith("phalanx"):
                continue
            res = targets(runs[n], runs["gang-binpack"], slack)
            missed = [f"{name} ({text})" for name, ok, text in res if not ok]
            print(f"\n{n}: {len(res) - len(missed)}/{len(res)} targets met" + (f" (slack {slack}x)" if slack != 1 else "")
                  + ("; MISS: " + "; ".join(missed) if missed else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/cli/phalanx"))
    ap.add_argument("--cases", nargs="+", default=["llm:1", "llm:2", "llm:3", "fleet:1", "fleet:2", "fleet:3"],
                    help="NAME:TIME_SCALE, NAME one of " + ", ".join(CASES))
    ap.add_argument("--hints", default="exact", choices=list(HINTS))
    ap.add_argument("--policies", default="phalanx,gang-binpack,gang-fifo")
    ap.add_argument("--variant", action="append", default=[], help="NAME:POLICY_YAML (an extra phalanx run)")
    ap.add_argument("--json", help="also write every summary to this file")
    args = ap.parse_args()
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"overload.py: {args.binary} not built (cmake --build build --target phalanx)")
    variants = []
    for v in args.variant:
        name, sep, path = v.partition(":")
        if not sep or not name or not os.path.isfile(path):
            sys.exit(f"overload.py: --variant {v}: expected NAME:FILE with an existing policy YAML")
        variants.append((name, os.path.abspath(path)))
    slack = 1.25 if args.hints == "noisy" else 1.0
    everything = {}
    for case in args.cases:
        name, sep, scale = case.partition(":")
        if name not in CASES or not sep:
            sys.exit(f"overload.py: --cases {case}: expected NAME:TIME_SCALE, NAME one of {', '.join(CASES)}")
        extra = HINTS[args.hints]
        runs = {p["policy"]: summary(p) for p in simulate(args.binary, CASES[name], scale, args.policies, extra)}
        for vname, path in variants:
            (p,) = simulate(args.binary, CASES[name], scale, "phalanx", extra + ["--scheduling-policy", path])
            runs[f"phalanx[{vname}]"] = summary(p)
        title = f"{name} x{scale}, hints {args.hints}"
        print_case(title, runs, slack)
        everything[title] = runs
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1)


if __name__ == "__main__":
    main()
