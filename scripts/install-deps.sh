#!/usr/bin/env bash
# Installs the Debian 12 packages polysci needs to build and test; with
# --bench also what the benchmark reports need (Halide's autoscheduler
# plugins, gnuplot for the figures). Idempotent: does nothing (and prints
# nothing) when everything is already installed.
set -euo pipefail

PACKAGES=(libisl-dev libxsmm-dev libhwloc-dev libdnnl-dev cmake gcc g++ pkg-config make
          python3-numpy python3-pytest python3-torch python3-torchvision python3-halide)
case "${1:-}" in
  --bench) PACKAGES+=(libhalide14-0-dev gnuplot-nox) ;;
  "") ;;
  *) echo "usage: bash scripts/install-deps.sh [--bench]" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ "$status" == ii* ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
