#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: put the configs of an autotune list and of per-device config
# files before the driver and launch each once (tilefit verify --launch): the autotuned matmul
# example, the same kernel with only its two largest tiles (one over an H100's budget), and the
# fused-MoE config files. Writes JSON and text into $OUT (default ./gpu-listed).
# usage: scripts/h200_listed.sh [TILEFIT_BINARY] [PYTHON]
set -u
cd "$(dirname "$0")/.."
TILEFIT="${1:-target/release/tilefit}"
PYTHON="${2:-python3}"
OUT="${OUT:-gpu-listed}"
mkdir -p "$OUT"
export TILEFIT_CACHE_DIR="$(mktemp -d)"
jobs=$(nproc)
big="$(mktemp -d)/big.toml"
sed -e "s#file = \"matmul_autotuned.py\"#file = \"$PWD/crates/tilefit/tests/fixtures/autotuned_big.py\"#" \
    -e 's/matmul_kernel_autotuned/matmul_kernel_big_tiles/' examples/matmul/autotune.toml > "$big"
: > "$OUT/summary.txt"
for spec in examples/matmul/autotune.toml "$big" examples/moe/spec.toml; do
  name=$(basename "$(dirname "$spec")")-$(basename "$spec" .toml)
  [ "$spec" = "$big" ] && name=autotuned-big
  "$TILEFIT" verify "$spec" --launch --python "$PYTHON" --jobs "$jobs" \
    --json "$OUT/verify_$name.json" > "$OUT/verify_$name.txt" 2>&1
  echo "verify $name exit $?" >> "$OUT/summary.txt"
done
cat "$OUT/summary.txt"
