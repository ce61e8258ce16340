#!/bin/sh
# Simulator speed under overload, for a CI gate (issue 23): replays a bundled trace under
# `phalanx` and `gang-binpack` in one run and prints one JSON object: each policy's replay
# wall time (the report's wallSeconds), events and peak queued jobs, and the ratio
# phalanx / gang-binpack. The ratio is measured on the same machine in the same run, so it
# holds on noisy shared machines; gate on it (e.g. fail above 2x the committed value).
# Default: sim/data/llm-mix.csv (10,000 jobs) at --time-scale 3 on sim/data/llm-cluster.yaml
# (330 % offered load, ~2,400 jobs queued at the peak); ~15 s on a 2-core VM.
# Usage: bench/sim/policy_speed.sh [CLUSTER TRACE TIME_SCALE]   Env: PHALANX (default build/cli/phalanx).
set -eu
phalanx="${PHALANX:-build/cli/phalanx}"
cluster="${1:-sim/data/llm-cluster.yaml}"
trace="${2:-sim/data/llm-mix.csv}"
scale="${3:-3}"
"$phalanx" simulate --cluster "$cluster" --trace "$trace" --time-scale "$scale" \
  --policy phalanx,gang-binpack --seed 1 --quiet --json |
  python3 -c '
import json, sys
report = json.load(sys.stdin)
out = {"cluster": sys.argv[1], "trace": sys.argv[2], "timeScale": float(sys.argv[3]), "policies": {}}
for p in report["policies"]:
    out["policies"][p["policy"]] = {"wallSeconds": round(p["wallSeconds"], 3), "events": p["events"],
                                    "peakQueuedJobs": max(r[3] for r in p["timeline"]["rows"])}
w = out["policies"]
out["phalanxOverBinpack"] = round(w["phalanx"]["wallSeconds"] / max(w["gang-binpack"]["wallSeconds"], 1e-9), 2)
print(json.dumps(out))
' "$cluster" "$trace" "$scale"
