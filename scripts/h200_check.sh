#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: launch the example kernels for real (scripts/launch_sizes.py)
# and probe the same configs offline for the GPU's arch with the same Triton, so the two can be
# compared cell by cell. Writes into $OUT (default: ./h200-check).
# usage: scripts/h200_check.sh [TILEFIT_BINARY] [PYTHON]
set -u
cd "$(dirname "$0")/.."
TILEFIT="${1:-target/release/tilefit}"
PYTHON="${2:-python3}"
OUT="${OUT:-h200-check}"
mkdir -p "$OUT"
export TILEFIT_CACHE_DIR="$(mktemp -d)"
ARCH=$("$PYTHON" -c "import torch; m, n = torch.cuda.get_device_capability(); print(f'sm_{m}{n}')")
"$PYTHON" -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__, torch.cuda.get_device_name())" > "$OUT/versions.txt" 2>&1
"$PYTHON" scripts/launch_sizes.py > "$OUT/launch.jsonl" 2> "$OUT/launch.err"
echo "launch exit $?" >> "$OUT/versions.txt"
"$TILEFIT" probe crates/tilefit/tests/fixtures/mla_small.toml --python "$PYTHON" --targets "$ARCH" --json "$OUT/probe_mla.json" > "$OUT/probe_mla.txt" 2>&1
echo "probe mla exit $?" >> "$OUT/versions.txt"
spec_dir=$(mktemp -d)
for size in 4096 4095; do
  sed -e "s#file = \"matmul.py\"#file = \"$PWD/examples/matmul/matmul.py\"#" \
      -e 's/BLOCK_M = \[64, 128\]/BLOCK_M = [128]/; s/BLOCK_N = \[128, 256\]/BLOCK_N = [128]/' \
      -e 's/BLOCK_K = \[32, 64\]/BLOCK_K = [64]/; s/num_stages = \[2, 3, 4\]/num_stages = [2, 4]/' \
      -e 's/num_warps = \[4, 8\]/num_warps = [4]/; /^baseline/d' \
      -e "s/value = 4096 }/value = $size }/g" examples/matmul/spec.toml > "$spec_dir/matmul_$size.toml"
  "$TILEFIT" probe "$spec_dir/matmul_$size.toml" --python "$PYTHON" --targets "$ARCH" --json "$OUT/probe_matmul_$size.json" > "$OUT/probe_matmul_$size.txt" 2>&1
  echo "probe matmul $size exit $?" >> "$OUT/versions.txt"
done
cat "$OUT/versions.txt"
