#!/usr/bin/env bash
# `make fuzz` (docs/development.md "Fuzzing"): builds the libFuzzer targets of fuzz/ with clang++
# (ASan + UBSan, build-fuzz/) and runs each for FUZZ_SECONDS over a working copy of its corpus.
# Findings (crash-*, leak-*, timeout-*, oom-* inputs) land in build-fuzz/crashes/<target>/; the
# summary table gives executions and findings per target. Exit status 1 when anything was found.
#   FUZZ_SECONDS=60      seconds per target
#   FUZZ_TARGETS="a b"   targets to run (default: every phalanx_fuzz_target in fuzz/CMakeLists.txt)
#   FUZZ_BUILD_DIR       build-fuzz
#   FUZZ_JOBS=$(nproc)   compile jobs
#   FUZZ_MERGE=1         merge what the run found into fuzz/corpus/<target> (minimised), to commit
#   FUZZ_NO_BUILD=1      run the binaries already built (e.g. while another run builds the rest)
#   FUZZ_SUMMARY         $FUZZ_BUILD_DIR/fuzz-summary.md (give each of two parallel runs its own)
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${FUZZ_JOBS:-$(nproc)}
ALL=$(sed -n 's/^phalanx_fuzz_target(\([a-z_0-9]*\).*/\1/p' fuzz/CMakeLists.txt)
TARGETS=${FUZZ_TARGETS:-$ALL}
CXX=${FUZZ_CXX:-clang++}
command -v "$CXX" >/dev/null || { echo "make fuzz needs clang++ (Debian: apt-get install clang)" >&2; exit 2; }

if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$BUILD" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_CXX_FLAGS_RELEASE=-O1" -DPHALANX_FUZZ=ON -DPHALANX_BUILD_TESTS=OFF \
    -DPHALANX_BUILD_BENCH=OFF "${launcher[@]}"
fi
binaries=()
for t in $TARGETS; do binaries+=("${t}_fuzz"); done
[[ ${FUZZ_NO_BUILD:-0} == 1 ]] || cmake --build "$BUILD" -j "$JOBS" --target "${binaries[@]}"

dict_for() {
  case $1 in
    trace_*) echo fuzz/dict/csv.dict ;;
    http_request) echo fuzz/dict/http.dict ;;
    kubeconfig|device_plugin_config|extender_config|scheduling_policy|cluster_spec) echo fuzz/dict/yaml.dict ;;
    metrics_label_value) echo "" ;;
    *) echo fuzz/dict/json.dict ;;
  esac
}

# A UBSan report prints its stack; ASan reports leaks (the default) and fails on them.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

summary=${FUZZ_SUMMARY:-$BUILD/fuzz-summary.md}
printf '| target | seconds | executions | exec/s | findings | corpus |\n|---|---:|---:|---:|---:|---:|\n' >"$summary"
found=0
for t in $TARGETS; do
  work=$BUILD/corpus/$t
  crashes=$BUILD/crashes/$t
  mkdir -p "$work" "$crashes"
  dict=$(dict_for "$t")
  args=(-max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
        -max_len=65536 -print_final_stats=1 -print_funcs=0 -artifact_prefix="$crashes/")
  [[ -n $dict ]] && args+=(-dict="$dict")
  seeds=(fuzz/corpus/"$t")
  [[ -d fuzz/regressions/$t ]] && seeds+=(fuzz/regressions/"$t")
  log=$BUILD/fuzz-$t.log
  echo "== $t: ${SECONDS_PER_TARGET}s"
  # -fork keeps going after a finding, so one run reports every distinct crash it meets.
  "$BUILD/fuzz/${t}_fuzz" "${args[@]}" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    "$work" "${seeds[@]}" >"$log" 2>&1 || true
  # Fork mode's status lines count the executions of all its jobs: "#N: cov: ... time: Ts job: J".
  execs=$( (grep -o '^#[0-9]*' "$log" || true) | tail -1 | tr -d '#')
  execs=${execs:-0}
  findings=$(find "$crashes" -type f | wc -l)
  found=$((found + findings))
  corpus=$(find "$work" -type f | wc -l)
  printf '| %s | %s | %s | %s | %s | %s |\n' "$t" "$SECONDS_PER_TARGET" "$execs" \
    "$((execs / (SECONDS_PER_TARGET > 0 ? SECONDS_PER_TARGET : 1)))" "$findings" "$corpus" >>"$summary"
  if [[ ${FUZZ_MERGE:-0} == 1 ]]; then
    "$BUILD/fuzz/${t}_fuzz" -merge=1 -timeout=10 -rss_limit_mb=2048 "fuzz/corpus/$t" "$work" >>"$log" 2>&1 || true
  fi
done
echo
cat "$summary"
echo "(logs: $BUILD/fuzz-<target>.log; findings: $BUILD/crashes/<target>/; replay one: $BUILD/fuzz/<target>_fuzz FILE)"
[[ $found == 0 ]]
