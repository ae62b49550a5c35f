#!/usr/bin/env bash
# liger-kernel's four core op test files on four emulated devices, cold, on the device machine's
# 16 cores (it is the many-core benchmark machine; no GPU is used). Carried (not committed) in
# .bench-carry/: liger/ (the repository's src/ and test/ at ead96b61), wheels/ (transformers<5,
# tokenizers, numpy, pytest for Python 3.12), tilefit-before.xz and tilefit-after.xz (release
# binaries of the baseline and this tree).
#   bash bench/device_test_folder.sh after     # the tree's binary, whole, then in 3 shards merged
#   bash bench/device_test_folder.sh before    # the baseline binary
# Results go to $OUT (side JSONs, the merged and unsharded reports' comparison).
set -euo pipefail
side="$1"
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
python3 -c "import pytest" 2>/dev/null ||
    python3 -m pip install -q --no-index --find-links .bench-carry/wheels pytest
[ -d /tmp/deps/transformers ] ||
    python3 -m pip install -q --no-index --find-links .bench-carry/wheels --target /tmp/deps \
        "transformers<5" tokenizers numpy
xz -dc ".bench-carry/tilefit-$side.xz" >"/tmp/tilefit-$side"
chmod +x "/tmp/tilefit-$side"
export PYTHONPATH="$PWD/python:$PWD/.bench-carry/liger/src:/tmp/deps"
python="$(command -v python3)"
{ nproc; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } >"$OUT/machine-$side.txt"
python3 bench/test_folder.py run "/tmp/tilefit-$side" "$python" .bench-carry/liger \
    --out "$OUT/side-$side.json" --report /tmp/whole-$side.json
[ "$side" = after ] || exit 0
# The same run in 3 shards, one after another here as on three CI machines, merged.
folder="$PWD/.bench-carry/liger"
for k in 1 2 3; do
    ( cd "$folder" && TILEFIT_CACHE_DIR=/tmp/shard-cache-$k /tmp/tilefit-after capture --module pytest \
        --targets rtx-pro-6000,gb10,h100,mi300x --python "$python" --json "/tmp/shard-$k.json" \
        --fail-on none --allow-stopped --shard "$k/3" -- -p tilefit.pytest_plugin -p no:cacheprovider -q \
        test/transformers/test_rms_norm.py test/transformers/test_layer_norm.py \
        test/transformers/test_swiglu.py test/transformers/test_rope.py >/dev/null 2>"$OUT/shard-$k.log" ) || true
    tail -3 "$OUT/shard-$k.log"
done
/tmp/tilefit-after merge /tmp/shard-1.json /tmp/shard-2.json /tmp/shard-3.json --json /tmp/merged.json \
    --junit "$OUT/merged-junit.xml" --fail-on none >/dev/null 2>"$OUT/merge.log" || true
python3 bench/same_report.py /tmp/whole-after.json /tmp/merged.json | tee "$OUT/sharded-vs-whole.txt"
gzip -c /tmp/merged.json >"$OUT/merged.json.gz"
