#!/usr/bin/env bash
# gpu-smoke.sh: on a machine with a real NVIDIA GPU, check that the device plugin's utilisation
# sampling sees real work (docs/device-plugin.md, "Checking on a real GPU"). NOT part of `make test`.
#
# Runs phalanx-device-plugin on the system's libnvidia-ml.so.1 against the fake kubelet
# (phalanx-gpu-smoke-kubelet: Registration + pod-resources, holding the first advertised device for
# pod smoke/gpu-smoke), starts a CUDA load on that device, and prints the sampled SM utilisation,
# memory and power every 2 s: high under load, near zero after. Exit 0 when the maximum under load
# is >= 50 % and the last reading after the load is <= 10 %; 1 otherwise; 2 when something needed is
# missing.
#
# Needs: an NVIDIA driver (libnvidia-ml.so.1), curl or python3, and one CUDA load, tried in this
# order: python3 with torch (CUDA build), python3 with cupy, nvcc (compiles a 20-line busy kernel).
# Build first:  cmake --build build --target phalanx-device-plugin phalanx-gpu-smoke-kubelet
#
#   scripts/gpu-smoke.sh [--build DIR] [--load-seconds N] [--load torch|cupy|nvcc]
# Dry run of the script itself without a GPU: --nvml-library <fake libnvidia-ml.so.1> --load sleep,
# with FAKE_NVML_MACHINE naming a machine whose first GPU has an idleAfter curve (tests/fakes/nvml).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build"
load_seconds=20
load_kind=""
nvml_library=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --load-seconds) load_seconds="$2"; shift 2 ;;
    --load) load_kind="$2"; shift 2 ;;
    --nvml-library) nvml_library="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-smoke: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

plugin="$build/device-plugin/phalanx-device-plugin"
kubelet_bin="$build/tests/phalanx-gpu-smoke-kubelet"
for f in "$plugin" "$kubelet_bin"; do
  [ -x "$f" ] || { echo "gpu-smoke: $f not built (cmake --build $build --target phalanx-device-plugin phalanx-gpu-smoke-kubelet)" >&2; exit 2; }
done
if [ -z "$nvml_library" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1'; then
  echo "gpu-smoke: libnvidia-ml.so.1 not found: no NVIDIA driver on this machine" >&2
  exit 2
fi

pick_load() {
  if [ -n "$load_kind" ]; then echo "$load_kind"; return; fi
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then echo torch; return; fi
  if python3 -c 'import cupy; cupy.cuda.runtime.getDeviceCount()' 2>/dev/null; then echo cupy; return; fi
  if command -v nvcc >/dev/null 2>&1; then echo nvcc; return; fi
  echo none
}
load_kind="$(pick_load)"
if [ "$load_kind" = none ]; then
  echo "gpu-smoke: no CUDA load available: install torch or cupy for python3, or the CUDA toolkit (nvcc)" >&2
  exit 2
fi

work="$(mktemp -d /tmp/phx-gpu-smoke-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/kubelet/device-plugins"
"$kubelet_bin" "$work/kubelet" >"$work/kubelet.out" 2>"$work/kubelet.err" &
pids+=($!)
"$plugin" ${nvml_library:+--nvml-library "$nvml_library"} --kubelet-dir "$work/kubelet" --publish=false --metrics-addr 127.0.0.1:0 \
  --lock-file "$work/plugin.lock" --utilisation-interval 1 --idle-window 5 >"$work/plugin.log" 2>&1 &
pids+=($!)

wait_for() {  # wait_for <seconds> <command...>
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}
port=""
find_port() { port="$(grep -o 'Started HTTP server address=[0-9.]*:[0-9]*' "$work/plugin.log" | head -1 | sed 's/.*://')"; [ -n "$port" ]; }
wait_for 30 find_port || { echo "gpu-smoke: the plugin did not start:" >&2; cat "$work/plugin.log" >&2; exit 1; }
wait_for 30 grep -q '^holding ' "$work/kubelet.out" || {
  echo "gpu-smoke: the plugin did not register with the fake kubelet:" >&2; tail -20 "$work/plugin.log" >&2; exit 1; }
device="$(sed -n 's/^holding //p' "$work/kubelet.out" | head -1)"
gpu="${device%%::*}"  # a time-sliced replica counts for its GPU
echo "gpu-smoke: plugin on port $port; pod smoke/gpu-smoke holds $device; load: $load_kind"

metrics() {
  if command -v curl >/dev/null 2>&1; then
    curl -s "http://127.0.0.1:$port/metrics"
  else
    python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$port/metrics').read().decode())"
  fi
}
value() {  # value <metric>: the value of <metric> for our device, or "-"
  metrics | awk -v m="$1" -v g="gpu=\"$gpu\"" 'index($0, m "{") == 1 && index($0, g) { v = $NF } END { print (v == "" ? "-" : v) }'
}
reading() {  # reading <label>
  local sm mem power
  sm="$(value phalanx_gpu_sm_utilisation)"
  mem="$(value phalanx_gpu_memory_used_bytes)"
  power="$(value phalanx_gpu_power_watts)"
  [ "$mem" != "-" ] && mem="$(awk -v b="$mem" 'BEGIN { printf "%.0f MiB", b / 1048576 }')"
  printf '%s  %-7s sm=%s%%  memory=%s  power=%s W\n' "$(date +%T)" "$1" "$sm" "$mem" "$power"
  last_sm="$sm"
}

start_load() {
  case "$load_kind" in
    torch)
      CUDA_VISIBLE_DEVICES="$gpu" python3 - "$load_seconds" <<'PY' &
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda"); b = torch.randn(8192, 8192, device="cuda")
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(10): a = (a @ b).clamp_(-1, 1)
    torch.cuda.synchronize()
PY
      ;;
    cupy)
      CUDA_VISIBLE_DEVICES="$gpu" python3 - "$load_seconds" <<'PY' &
import sys, time, cupy
a = cupy.random.rand(8192, 8192, dtype=cupy.float32); b = cupy.random.rand(8192, 8192, dtype=cupy.float32)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(10): a = cupy.clip(a @ b, -1, 1)
    cupy.cuda.Device().synchronize()
PY
      ;;
    nvcc)
      cat >"$work/busy.cu" <<'CU'
#include <cstdio>
#include <cstdlib>
#include <ctime>
__global__ void busy(float* x, long iters) {
  float v = x[threadIdx.x + blockIdx.x * blockDim.x];
  for (long i = 0; i < iters; ++i) v = v * 0.999999f + 0.000001f;
  x[threadIdx.x + blockIdx.x * blockDim.x] = v;
}
int main(int argc, char** argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 20;
  float* x;
  if (cudaMalloc(&x, 1024 * 1024 * sizeof(float)) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); return 1; }
  const time_t end = time(nullptr) + (time_t)seconds;
  while (time(nullptr) < end) { busy<<<1024, 1024>>>(x, 1 << 20); cudaDeviceSynchronize(); }
  return 0;
}
CU
      nvcc -O2 -o "$work/busy" "$work/busy.cu"
      CUDA_VISIBLE_DEVICES="$gpu" "$work/busy" "$load_seconds" &
      ;;
    sleep) sleep "$load_seconds" & ;;  # dry run: the fake NVML's curve plays the GPU
    *) echo "gpu-smoke: unknown load $load_kind" >&2; exit 2 ;;
  esac
  load_pid=$!
  pids+=("$load_pid")
}

last_sm="-"
wait_for 30 test "$(value phalanx_gpu_memory_total_bytes)" != "-" || {
  echo "gpu-smoke: no utilisation metrics for $gpu:" >&2; tail -20 "$work/plugin.log" >&2; exit 1; }
for _ in 1 2 3; do reading before; sleep 1; done
max_sm=0
start_load
while kill -0 "$load_pid" 2>/dev/null; do
  sleep 2
  reading load
  if [ "$last_sm" != "-" ]; then max_sm="$(awk -v a="$max_sm" -v b="$last_sm" 'BEGIN { print (b > a ? b : a) }')"; fi
done
wait "$load_pid" || { echo "gpu-smoke: the $load_kind load failed" >&2; exit 1; }
for _ in 1 2 3 4; do sleep 2; reading after; done

grep -i 'unsupported\|failed while sampling' "$work/plugin.log" | sed 's/^/plugin: /' || true
echo "gpu-smoke: max SM utilisation under load ${max_sm}%, after ${last_sm}%"
if [ "$last_sm" = "-" ]; then
  echo "gpu-smoke: FAIL: this GPU reports no SM utilisation (MIG mode? see the plugin lines above)"
  exit 1
fi
if awk -v m="$max_sm" -v l="$last_sm" 'BEGIN { exit !(m >= 50 && l <= 10) }'; then
  echo "gpu-smoke: PASS"
else
  echo "gpu-smoke: FAIL: expected >= 50% under load and <= 10% after"
  exit 1
fi
