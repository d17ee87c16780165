#!/usr/bin/env bash
# Sanitizer runs of the test suite (docs/reliability.md).
#
#   scripts/sanitize.sh [ctest args...]       ASan+UBSan (LSan on): configure, build and
#                                             run the whole ctest suite with the "asan"
#                                             preset (CMakePresets.json, build-asan/)
#   scripts/sanitize.sh --valgrind            valgrind memcheck (--leak-check=full,
#                                             --error-exitcode=1) of a representative
#                                             subset, unsanitized "valgrind" preset
#                                             (build-valgrind/)
#   scripts/sanitize.sh --all [ctest args...] both
#
# The presets also build tests/fault (allocation-failure injection, numerics)
# through tests/fault/hook.cmake, whether or not tests/CMakeLists.txt includes it.
# Everything runs under `nice -n 19` with at most 2 build jobs
# (SANITIZE_JOBS overrides). LIBXSMM (a prebuilt static archive) and the code it
# JITs are not instrumented by ASan; under valgrind LIBXSMM sees the CPU that
# valgrind emulates (no AVX-512) and JITs for that.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC="$PWD"
JOBS="${SANITIZE_JOBS:-2}"
NICE=(nice -n 19)

run_asan=1
run_valgrind=0
case "${1:-}" in
--valgrind) run_asan=0; run_valgrind=1; shift ;;
--all) run_valgrind=1; shift ;;
-h|--help) sed -n '2,20p' "$0"; exit 0 ;;
esac

status=0

if [ "$run_asan" = 1 ]; then
    echo "== ASan+UBSan: configure/build (preset asan, build-asan/)"
    "${NICE[@]}" cmake --preset asan >/dev/null
    "${NICE[@]}" cmake --build --preset asan -j "$JOBS"
    # The test preset sets the same; exported too for tests that spawn children.
    export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    export LSAN_OPTIONS="suppressions=$SRC/tests/fault/lsan.supp:print_suppressions=0"
    echo "== ASan+UBSan: ctest (ASAN_OPTIONS=$ASAN_OPTIONS)"
    if ! "${NICE[@]}" ctest --preset asan "$@"; then
        status=1
    fi
fi

if [ "$run_valgrind" = 1 ]; then
    command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install valgrind)"; exit 2; }
    B="$SRC/build-valgrind"
    echo "== valgrind: configure/build (preset valgrind, build-valgrind/)"
    "${NICE[@]}" cmake --preset valgrind >/dev/null
    "${NICE[@]}" cmake --build --preset valgrind -j "$JOBS"
    VG=(valgrind -q --error-exitcode=1 --leak-check=full --track-origins=yes
        --suppressions="$SRC/tests/fault/valgrind.supp")
    export PS_CALIBRATE=0 OMP_NUM_THREADS=2
    # name | environment | command (relative to build-valgrind/)
    cases=(
        "test_api_errors||tests/test_api_errors"
        "test_schedules||tests/test_schedules"
        "test_conv_random (8 shapes)|PS_TEST_COUNT=8|tests/test_conv_random"
        "test_gemm_random (8 shapes)|PS_TEST_COUNT=8|tests/test_gemm_random"
        "test_threads||tests/test_threads"
        "example_conv_nhwc||examples/example_conv_nhwc"
        "example_gemm||examples/example_gemm"
        "cli run conv nchw strided||tools/polysci run conv --N 1 --H 15 --W 13 --C 16 --K 32 --R 3 --S 3 --stride 2 --pad-top 1 --pad-right 1 --layout nchw --weights rsck --reps 1"
        "cli run conv 3x3 bias relu (cost ranker, top-k timing)||tools/polysci run conv --N 2 --H 14 --W 14 --C 32 --K 48 --R 3 --S 3 --pad 1 --bias --relu --ranker cost --top-k 2 --reps 1"
        "cli run gemm row-major transposed||tools/polysci run gemm --M 40 --N 24 --K 64 --order row --trans-a --trans-b --alpha 0.5 --beta 2 --ldc 30 --reps 1"
        "test_alloc_failures (every 7th N)|PS_FAULT_STRIDE=7|tests/fault/test_alloc_failures"
    )
    for c in "${cases[@]}"; do
        IFS='|' read -r name envs cmd <<<"$c"
        # shellcheck disable=SC2206
        argv=($cmd)
        exe="$B/${argv[0]}"
        [ -x "$exe" ] || exe="$B/$(basename "${argv[0]}")" # tests/fault may be built in the top level
        if [ ! -x "$exe" ]; then
            echo "-- valgrind: $name: SKIPPED (${argv[0]} not built)"
            continue
        fi
        log="$B/valgrind-$(echo "$name" | tr -c 'A-Za-z0-9_\n' '_').log"
        t0=$(date +%s)
        # shellcheck disable=SC2086
        if (cd "$B" && env $envs "${NICE[@]}" "${VG[@]}" "$exe" "${argv[@]:1}") >"$log" 2>&1; then
            echo "-- valgrind: $name: ok ($(( $(date +%s) - t0 )) s)"
        else
            echo "-- valgrind: $name: FAILED ($(( $(date +%s) - t0 )) s), log $log:"
            grep -E '^==[0-9]+==' "$log" | head -40 || tail -20 "$log"
            status=1
        fi
    done
fi
exit "$status"
