#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: read the driver's budgets (devices --live), then verify the
# examples (attention, MLA, matmul) and a replay of a Triton cache the machine produces itself by
# launching the examples. Writes JSON and text into $OUT (default ./gpu-verify).
# usage: scripts/h200_verify.sh [TILEFIT_BINARY] [PYTHON]
set -u
cd "$(dirname "$0")/.."
TILEFIT="${1:-target/release/tilefit}"
PYTHON="${2:-python3}"
OUT="${OUT:-gpu-verify}"
mkdir -p "$OUT"
export TILEFIT_CACHE_DIR="$(mktemp -d)"
jobs=$(nproc)
"$TILEFIT" devices --live > "$OUT/live.txt" 2>&1; echo "devices --live exit $?" > "$OUT/summary.txt"
"$TILEFIT" devices --live --json > "$OUT/live.json" 2>>"$OUT/live.txt"
for example in attention mla_decode matmul; do
  "$TILEFIT" verify "examples/$example/spec.toml" --launch --python "$PYTHON" --jobs "$jobs" \
    --json "$OUT/verify_$example.json" > "$OUT/verify_$example.txt" 2>&1
  echo "verify $example exit $?" >> "$OUT/summary.txt"
done
cache=$(mktemp -d)
TRITON_CACHE_DIR="$cache" "$PYTHON" scripts/launch_sizes.py > /dev/null 2>&1
"$TILEFIT" verify "$cache" --python "$PYTHON" --jobs "$jobs" --json "$OUT/verify_replay.json" > "$OUT/verify_replay.txt" 2>&1
echo "verify replay exit $?" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
tail -n 3 "$OUT"/verify_*.txt
