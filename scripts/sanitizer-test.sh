#!/usr/bin/env bash
# Runs ctest in a sanitizer build (`make asan`, `make tsan`; docs/hardening.md "Sanitizers") with
# the sanitizers' options and the suppressions in tests/sanitizers/. Daemons the tests start as
# child processes inherit the environment, so they run under the same options.
#   scripts/sanitizer-test.sh asan|tsan BUILD_DIR [ctest arguments...]
set -euo pipefail
kind=${1:?asan or tsan}
build=${2:?build directory}
shift 2
supp="$(cd "$(dirname "$0")/.." && pwd)/tests/sanitizers"
case "$kind" in
  asan)
    # Any ASan or UBSan report fails the test (UBSan is also built -fno-sanitize-recover); leaks
    # are reported at exit (LeakSanitizer) and fail it too. fast_unwind_on_malloc=0: allocation
    # stacks unwind through the uninstrumented libraries (no frame pointers), so a suppression
    # can name the library function that leaked instead of the whole library.
    export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:fast_unwind_on_malloc=0:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:print_summary=1"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
    ;;
  tsan)
    # ignore_noninstrumented_modules: memcpy/memset/malloc that an uninstrumented library (cpprest,
    # gRPC) calls are not checked as accesses; their mutex and condition-variable calls still are.
    # Our own code's accesses are all instrumented (docs/hardening.md "Sanitizers").
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$supp/tsan.supp:print_suppressions=0"
    ;;
  *)
    echo "sanitizer-test.sh: unknown kind '$kind' (asan or tsan)" >&2
    exit 2
    ;;
esac
cd "$build"
start=$(date +%s)
status=0
ctest --output-on-failure "$@" || status=$?
echo "sanitizer-test.sh: $kind in $build, $(( $(date +%s) - start )) s, ctest exit $status"
exit "$status"
