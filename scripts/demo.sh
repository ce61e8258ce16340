#!/usr/bin/env bash
# `make demo`: replay the bundled Philly slice and the synthetic gang mix on the bundled
# 64 x 8 H100 cluster under every policy, and the LLM-era workload on its 864-node fleet
# under phalanx and gang-binpack, and print the comparisons (computed now, not canned).
# Usage: scripts/demo.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
phalanx="$build/cli/phalanx"
if [[ ! -x "$phalanx" ]]; then
  echo "demo: $phalanx not found; build first (make demo does)" >&2
  exit 1
fi
out="${PHALANX_DEMO_OUT:-$build/demo}"
mkdir -p "$out"
data="$root/sim/data"

echo "== Philly slice (2,000 jobs, Microsoft Philly via Pollux; see sim/data/README.md) =="
"$phalanx" simulate --cluster "$data/demo-cluster.yaml" --trace "$data/philly-demo.csv" --trace-format philly \
  --policy all --seed 1 --report "$out/philly-demo.json" --html "$out/philly-demo.html"
echo
echo "== Synthetic gang mix (400 jobs with tiers and checkpoints) =="
"$phalanx" simulate --cluster "$data/demo-cluster.yaml" --trace "$data/gang-mix.csv" --trace-format phalanx \
  --policy all --seed 1 --prices "$data/prices.json" --report "$out/gang-mix.json" --html "$out/gang-mix.html"
echo
echo "== Cost of the gang mix per policy and tier (sim/data/prices.json; phalanx report --from-sim) =="
"$phalanx" report --from-sim "$out/gang-mix.json"
echo
echo "== LLM-era workload (10,000 jobs on 864 nodes / 6,528 GPUs of three models; sim/data/README.md) =="
"$phalanx" simulate --cluster "$data/llm-cluster.yaml" --trace "$data/llm-mix.csv" --trace-format phalanx \
  --policy phalanx,gang-binpack --seed 1 --report "$out/llm-mix.json" --html "$out/llm-mix.html"
echo
echo "Reports: $out/{philly-demo,gang-mix,llm-mix}.{json,html}"
