#!/usr/bin/env bash
# Builds polysci, then plans, runs and checks every ResNet-50 layer (batch 2)
# of bench/layers/resnet50.txt.
# Extra arguments go to `polysci demo` (e.g. --threads 2, --layers vgga).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/tools/polysci demo --layers resnet50 --N 2 "$@"
