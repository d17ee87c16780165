#!/usr/bin/env bash
# Builds polysci, then plans, runs and checks every ResNet-50 layer (batch 2).
# Extra arguments go to `polysci demo` (e.g. --threads 2, --layers vgga).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
layers=()
# The shared folder sits next to the repository; if it is elsewhere, the tool
# finds it through $POLYSCI_SHARED.
[[ -f ../shared/layers/resnet50.txt ]] && layers=(--layers ../shared/layers/resnet50.txt)
exec build/tools/polysci demo "${layers[@]}" --N 2 "$@"
