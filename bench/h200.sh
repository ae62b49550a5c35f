#!/usr/bin/env bash
# The harness on a many-core machine (the lent H200/H100 box: the work is CPU-bound, the GPU
# idles), in one run: the single-process baseline and floor, and the cold (forked and spawned
# workers) and warm sweeps at 16, 8 and 4 workers. Writes the harness's JSON and log into $OUT.
#
# What to carry to the device machine: the release binary (`cargo build --release`, then
# target/release/tilefit), bench/ and examples/. Nothing else: the run is made in a folder holding
# only those (no crates/), as a user with the release binary has them, and the worker the baseline
# imports is the binary's own (`tilefit toolchain worker`).
# usage: bench/h200.sh [TILEFIT_BINARY] [PYTHON]        (ONLY=abcd to leave out the spawned runs)
set -eu
cd "$(dirname "$0")/.."
TILEFIT="$(realpath "${1:-target/release/tilefit}")"
PYTHON="${2:-python3}"
OUT="$(realpath -m "${OUT:-bench-out}")"
mkdir -p "$OUT"
HERE=$(mktemp -d)
trap 'rm -rf "$HERE"' EXIT
cp -r bench examples "$HERE/"
cp "$TILEFIT" "$HERE/tilefit"
cd "$HERE"
"$PYTHON" bench/harness.py --tilefit ./tilefit --python "$PYTHON" --workers "$(nproc),8,4" --repeat 1 \
    --only "${ONLY:-abscd}" --out "$OUT/results-h200.json" 2> >(tee "$OUT/harness-log.txt" >&2) > /dev/null
