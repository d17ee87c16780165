#!/usr/bin/env bash
# Builds polysci, then runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure
