#!/usr/bin/env python3
"""The issue-25 targets over a neighbourhood of each load, not at one point (bench/RESULTS.md
"Issue 25, session 7").

Under overload a replay is chaotic: one gang placed elsewhere early reorders hours of work,
and a single replay's "MISS by 3 %" can flip when the load moves by 1 %. This replays each
case at SAMPLES time-scales spread evenly over SCALE x (1 +- SPREAD), phalanx and
gang-binpack each time, and prints per target how often it holds and phalanx's ratio to
gang-binpack (median and range over the samples). A target met in every sample holds; one
missed in every sample is a real loss; one in between is a knife edge. The total is the
expected count of targets met (the sum of the fractions), the number to compare policies by.

  bench/sim/overload_ensemble.py                          # six cases x 9 samples (~1 min)
  bench/sim/overload_ensemble.py --hints noisy --cases llm:2 fleet:2 --samples 15
  bench/sim/overload_ensemble.py --variant /tmp/policy.yaml   # phalanx with that policy
  bench/sim/overload_ensemble.py --all                    # every target, also those always held
  bench/sim/overload_ensemble.py --conflicts              # per missed target, the variants that hold it
"""
import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overload  # noqa: E402  (the cases, the replay and the targets)
import overload_frontier  # noqa: E402  (its policy variants, for --conflicts)

DEFAULT_CASES = ["llm:1", "llm:2", "llm:3", "fleet:1", "fleet:2", "fleet:3"]


def scales(scale, samples, spread):
    if samples == 1:
        return [scale]
    return [scale * (1 + spread * (2 * i / (samples - 1) - 1)) for i in range(samples)]


def fmt_ratio(r):
    return "inf" if r == float("inf") else f"{r:.2f}x"


def target_value(name, ph, gb):
    """(value, formatter) of a target in one sample: phalanx / gang-binpack for the relative
    targets, the quantity itself for the absolute ones (None where there is none)."""
    parts = name.split()
    if len(parts) == 2 and parts[0] in overload.TIERS:
        a, b = ph["tiers"][parts[0]][parts[1]], gb["tiers"][parts[0]][parts[1]]
    elif name == "GPU-weighted mean":
        a, b = ph["gpu_weighted"], gb["gpu_weighted"]
    elif name.startswith("makespan"):
        a, b = ph["makespan"], gb["makespan"]
    elif name.startswith("critical+high"):
        return overload.crit_high_mean(ph), overload.dur
    elif name.startswith("preemptions"):
        return ph["preempt_per_job"], lambda v: f"{v:.3f}/job"
    elif name.startswith("lost work"):
        return ph["lost_pct"], lambda v: f"{v:.2f}%"
    else:
        return None, None
    if b <= 1:
        return (1.0 if a <= 1 else float("inf")), fmt_ratio
    return a / b, fmt_ratio


def run_case(args, case, extra, slack, variants):
    """{variant: {target: [(ok, value or None, formatter, text)]}} over the samples of one case;
    `variants` maps a name to a scheduling-policy YAML (None: the engine's defaults)."""
    name, sep, scale = case.partition(":")
    if name not in overload.CASES or not sep:
        sys.exit(f"overload_ensemble.py: --cases {case}: expected NAME:TIME_SCALE, NAME one of "
                 f"{', '.join(overload.CASES)}")
    out = {v: {} for v in variants}
    for s in scales(float(scale), args.samples, args.spread):
        s = f"{s:.4f}"
        (gb,) = overload.simulate(args.binary, overload.CASES[name], s, "gang-binpack", extra)
        gb = overload.summary(gb)
        for vname, path in variants.items():
            policy = ["--scheduling-policy", path] if path else []
            (p,) = overload.simulate(args.binary, overload.CASES[name], s, "phalanx", extra + policy)
            ph = overload.summary(p)
            for tname, ok, text in overload.targets(ph, gb, slack):
                out[vname].setdefault(tname, []).append((ok, *target_value(tname, ph, gb), text))
    return out


def print_conflicts(args, extra, slack):
    """For every target the defaults do not hold in every sample: in how many samples each of
    overload_frontier.py's variants holds it. A target some variant holds in most samples
    conflicts with the rule that variant turns off; one no variant holds is a loss of the
    engine's own order, placement or queues."""
    with tempfile.TemporaryDirectory() as tmp:
        variants = {}
        for v, keys in overload_frontier.VARIANTS.items():
            if not keys:
                variants[v] = None
                continue
            path = os.path.join(tmp, f"{len(variants)}.yaml")
            with open(path, "w") as f:
                f.write(overload.tiers_yaml(keys))
            variants[v] = path
        names = list(variants)
        print("| case | target | " + " | ".join(names) + " | verdict |")
        print("|---|---|" + "---|" * (len(names) + 1))
        for case in args.cases:
            results = run_case(args, case, extra, slack, variants)
            for tname, samples in results["defaults"].items():
                if all(ok for ok, *_ in samples):
                    continue
                held = {v: sum(ok for ok, *_ in results[v][tname]) for v in names}
                most = [v for v in names if v != "defaults" and 2 * held[v] > args.samples and held[v] > held["defaults"]]
                if 2 * held["defaults"] > args.samples:
                    verdict = "knife edge: the defaults hold it in most samples"
                elif most:
                    verdict = "conflict: " + ", ".join(most)
                else:
                    verdict = "no variant holds it in most samples"
                print(f"| {case} | {tname} | " + " | ".join(f"{held[v]}/{args.samples}" for v in names)
                      + f" | {verdict} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(overload.ROOT, "build/cli/phalanx"))
    ap.add_argument("--cases", nargs="+", default=DEFAULT_CASES, help="NAME:TIME_SCALE")
    ap.add_argument("--hints", default="exact", choices=list(overload.HINTS))
    ap.add_argument("--samples", type=int, default=9)
    ap.add_argument("--spread", type=float, default=0.05, help="relative half-width of the load neighbourhood")
    ap.add_argument("--variant", help="a scheduling-policy YAML for phalanx (default: the engine's defaults)")
    ap.add_argument("--all", action="store_true", help="list every target, also those met in every sample")
    ap.add_argument("--conflicts", action="store_true",
                    help="for each target the defaults miss in some sample, how often each of "
                         "overload_frontier.py's variants holds it")
    args = ap.parse_args()
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"overload_ensemble.py: {args.binary} not built (cmake --build build --target phalanx)")
    if args.samples < 1 or not 0 <= args.spread < 1:
        sys.exit("overload_ensemble.py: --samples >= 1 and 0 <= --spread < 1")
    if args.conflicts and args.variant:
        sys.exit("overload_ensemble.py: --conflicts replays overload_frontier.py's variants; drop --variant")
    if args.variant and not os.path.isfile(args.variant):
        sys.exit(f"overload_ensemble.py: --variant {args.variant}: no such file")
    if args.variant:
        args.variant = os.path.abspath(args.variant)
    slack = 1.25 if args.hints == "noisy" else 1.0
    extra = overload.HINTS[args.hints]
    print(f"hints {args.hints}, {args.samples} samples per case over x(1 +- {args.spread})"
          + (f", policy {args.variant}" if args.variant else "") + "\n")
    if args.conflicts:
        print_conflicts(args, extra, slack)
        return
    print("| case | target | met | median (range): phalanx / gang-binpack, or the value | held / edge / lost |")
    print("|---|---|---|---|---|")
    expected = held = edge = lost = total = 0
    for case in args.cases:
        results = run_case(args, case, extra, slack, {"phalanx": args.variant})["phalanx"]
        case_expected = 0.0
        for tname, samples in results.items():
            n_ok = sum(ok for ok, _, _, _ in samples)
            frac = n_ok / len(samples)
            case_expected += frac
            total += 1
            held += n_ok == len(samples)
            lost += n_ok == 0
            edge += 0 < n_ok < len(samples)
            if n_ok == len(samples) and not args.all:
                continue
            values = sorted(v for _, v, _, _ in samples if v is not None)
            if values:
                f = samples[0][2]
                cell = f"{f(statistics.median(values))} ({f(values[0])}-{f(values[-1])})"
            else:
                cell = samples[len(samples) // 2][3]
            kind = "held" if n_ok == len(samples) else "lost" if n_ok == 0 else "edge"
            print(f"| {case} | {tname} | {n_ok}/{len(samples)} | {cell} | {kind} |")
        expected += case_expected
        print(f"| {case} | **expected met** | {case_expected:.1f}/{len(results)} | | |")
    print(f"\nexpected targets met: {expected:.1f} of {total}; held in every sample {held}, "
          f"knife edge {edge}, lost in every sample {lost}")


if __name__ == "__main__":
    main()
