#!/usr/bin/env bash
# The queue sweep of bench/RESULTS.md ("Two teams"): replays a trace on a cluster description
# with team queues under phalanx with reclaimAfterSeconds 0 (the description's own setting),
# 600, 900 and 1800 s, under gang-binpack (queues reported, not enforced), and under phalanx
# with --no-queues (the utilisation baseline), and prints one line per run.
# Usage: bench/sim/queue_sweep.sh CLUSTER.yaml TRACE.csv [more phalanx simulate flags]
# Env: PHALANX (default build/cli/phalanx).
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 CLUSTER.yaml TRACE.csv [simulate flags]" >&2
  exit 2
fi
cluster=$1
trace=$2
shift 2
phalanx="${PHALANX:-build/cli/phalanx}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$phalanx" simulate --cluster "$cluster" --trace "$trace" --policy phalanx --no-queues --seed 1 --quiet \
  --report "$work/no-queues.json" "$@" >/dev/null
runs=()
for after in 0 600 900 1800; do
  c="$cluster"
  if [[ $after != 0 ]]; then
    c="$work/cluster-$after.yaml"
    grep -v '^reclaimAfterSeconds:' "$cluster" >"$c"
    echo "reclaimAfterSeconds: $after" >>"$c"
  fi
  "$phalanx" simulate --cluster "$c" --trace "$trace" --policy phalanx --seed 1 --quiet --report "$work/after-$after.json" "$@" >/dev/null
  runs+=("after-$after")
done
"$phalanx" simulate --cluster "$cluster" --trace "$trace" --policy gang-binpack --seed 1 --quiet \
  --report "$work/gang-binpack.json" "$@" >/dev/null
runs+=(gang-binpack)
python3 - "$work" "${runs[@]}" <<'PY'
import json, sys
work, runs = sys.argv[1], sys.argv[2:]
base = json.load(open(f"{work}/no-queues.json"))["policies"][0]
print(f"phalanx --no-queues: utilisation {100 * base['gpuUtilisation']:.1f}%, makespan {base['makespanSeconds'] / 3600:.1f} h")
for run in runs:
    p = json.load(open(f"{work}/{run}.json"))["policies"][0]
    f = p["fairness"]
    worst = max(((q["deviation"], q["queue"], w["startHours"]) for w in f["contendedWindows"] for q in w["queues"]),
                default=(0, "-", 0))
    below = ", ".join(f"{q['queue']} {q['hoursBelowMinDemandNominal']:.1f} h ({q['gpuHoursBelowMinDemandNominal']:.0f} GPU-h)"
                      for q in p["queues"])
    print(f"{run}: utilisation {100 * p['gpuUtilisation']:.1f}% ({100 * p['gpuUtilisation'] / base['gpuUtilisation']:.1f}% of no queues), "
          f"Jain {f['jainIndex']:.3f}, 6-h windows within 10% {f['windowsWithin10Percent']}/{f['windows6h']} "
          f"(worst {100 * worst[0]:.1f}%: {worst[1]} @ {worst[2]:g} h), reclaims/job {f['reclaimsPerJob']:.3f} "
          f"({f['reclaimPreemptions']}), lost {p['lostGpuHours']:.1f} GPU-h; below min(demand, nominal): {below}")
PY
