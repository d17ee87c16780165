#!/usr/bin/env bash
# Builds the libFuzzer harness (clang-14, ASan+UBSan, the library's sources
# compiled with coverage) into build-fuzz/ and fuzzes for SECONDS seconds.
#
#   tests/fuzz/run.sh [SECONDS] [extra libFuzzer args...]     (default 60)
#   tests/fuzz/run.sh --build-only
#   tests/fuzz/run.sh --repro CRASH_FILE...                    (runs inputs once)
#
# Seeds: tests/fuzz/corpus (kept small, in git). New inputs found go to
# build-fuzz/corpus (not in git); crashes to build-fuzz/artifacts/.
# Environment: FUZZ_BUILD_DIR (default <repo>/build-fuzz), FUZZ_JOBS (make -j, default 2).
# Everything runs under `nice -n 19`.
set -euo pipefail
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${FUZZ_BUILD_DIR:-$SRC/build-fuzz}"
JOBS="${FUZZ_JOBS:-2}"
mkdir -p "$BUILD/corpus" "$BUILD/artifacts"
nice -n 19 make --no-print-directory -C "$BUILD" -f "$SRC/tests/fuzz/Makefile" SRC="$SRC" -j"$JOBS" fuzz_polysci

export PS_CALIBRATE=0
# LIBXSMM's JIT code is not instrumented; leaks are checked per input by libFuzzer.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"

case "${1:-60}" in
--build-only) exit 0 ;;
--repro)
    shift
    exec nice -n 19 "$BUILD/fuzz_polysci" -runs=1 "$@" ;;
esac
SECONDS_TO_RUN="${1:-60}"
shift || true
cd "$BUILD"
# -timeout: one input must stay far below this (the shapes are clamped).
exec nice -n 19 ./fuzz_polysci -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 \
    -max_len=4096 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/" \
    "$@" "$BUILD/corpus" "$SRC/tests/fuzz/corpus"
