#!/usr/bin/env bash
# Reliability CI job (separate from .ci/run): the whole test suite under
# ASan+UBSan+LSan, valgrind memcheck of a subset, and a short fuzzing run.
#   FUZZ_SECONDS (default 60; 0 skips fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/sanitize.sh --all
if [ "${FUZZ_SECONDS:-60}" != 0 ]; then
    bash tests/fuzz/run.sh "${FUZZ_SECONDS:-60}"
fi
