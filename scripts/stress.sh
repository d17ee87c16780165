#!/usr/bin/env bash
# The whole ctest suite, RUNS times in a row, while LOAD busy processes (`stress --cpu LOAD`, Debian
# package `stress`) compete for the cores: no test may depend on an idle machine (docs/reliability.md).
#
#   scripts/stress.sh [RUNS [LOAD]]          plain suite (build/), default 5 runs, 3 busy processes
#   ASAN=1 scripts/stress.sh [RUNS [LOAD]]   then the same under ASan + UBSan (build-asan/, preset asan)
#
# Builds what is missing first (scripts/build.sh; the asan preset). The tests and the load run at the same
# priority; ctest runs two tests at a time. Prints one line per run and exits 1 if any run failed; each
# run's log is kept in $OUT (default a new folder under /tmp).
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5} LOAD=${2:-3}
case "$RUNS$LOAD" in *[!0-9]*) echo "usage: scripts/stress.sh [RUNS [LOAD]]" >&2; exit 2 ;; esac
command -v stress >/dev/null || { echo "stress.sh: needs 'stress' (apt-get install stress)" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d /tmp/polysci-stress.XXXXXX)}
mkdir -p "$OUT"
[ -f build/CTestTestfile.cmake ] || bash scripts/build.sh || exit 1
if [ "${ASAN:-0}" = 1 ] && [ ! -f build-asan/CTestTestfile.cmake ]; then
  cmake --preset asan >/dev/null && cmake --build --preset asan -j 2 || exit 1
fi
stress --cpu "$LOAD" >"$OUT/stress.log" 2>&1 &
load_pid=$!
trap 'kill "$load_pid" 2>/dev/null; wait "$load_pid" 2>/dev/null' EXIT
echo "stress --cpu $LOAD beside the suite, $(git rev-parse --short HEAD 2>/dev/null), logs in $OUT"
failed=0
suite() { # NAME I COMMAND...
  local name=$1 i=$2 t0=$SECONDS
  shift 2
  "$@" >"$OUT/${name}_$i.log" 2>&1
  local rc=$?
  [ $rc = 0 ] || failed=1
  echo "$name run $i: rc=$rc $(grep -E 'tests passed|tests failed' "$OUT/${name}_$i.log" | tail -1)" \
       "($((SECONDS - t0)) s, load $(cut -d' ' -f1-3 /proc/loadavg))"
}
for i in $(seq 1 "$RUNS"); do suite plain "$i" ctest --test-dir build -j2 --output-on-failure; done
if [ "${ASAN:-0}" = 1 ]; then
  export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  export LSAN_OPTIONS="suppressions=$PWD/tests/fault/lsan.supp:print_suppressions=0"
  for i in $(seq 1 "$RUNS"); do suite asan "$i" ctest --preset asan -j2; done
fi
exit $failed
