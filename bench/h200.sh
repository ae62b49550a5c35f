#!/usr/bin/env bash
# The harness on a many-core machine (the lent H200 box: the work is CPU-bound, the GPU idles), in
# one run: the single-process baseline and floor, and the cold (forked and spawned workers) and
# warm sweeps at 16, 8 and 4 workers. Writes the harness's JSON and log into $OUT.
# usage: bench/h200.sh [TILEFIT_BINARY] [PYTHON]
set -eu
cd "$(dirname "$0")/.."
TILEFIT="${1:-target/release/tilefit}"
PYTHON="${2:-python3}"
OUT="${OUT:-bench-out}"
mkdir -p "$OUT"
"$PYTHON" bench/harness.py --tilefit "$TILEFIT" --python "$PYTHON" --workers "$(nproc),8,4" --repeat 1 \
    --out "$OUT/results-h200.json" 2> >(tee "$OUT/harness-log.txt" >&2) > /dev/null
