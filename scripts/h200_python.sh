#!/usr/bin/env bash
# The Python package and pytest plugin on a real GPU (issue: the fix at run time). Run from the
# repository root on a machine with CUDA, torch and Triton; writes what it saw to $OUT.
#   TILEFIT_BIN=path/to/tilefit OUT=/tmp/out bash scripts/h200_python.sh
set -uo pipefail
OUT="${OUT:-$(mktemp -d)}"
BIN="${TILEFIT_BIN:?set TILEFIT_BIN to the tilefit binary}"
export TILEFIT_PYTHON="${TILEFIT_PYTHON:-$(command -v python3)}"
export PYTHONPATH="$PWD/python"
nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader > "$OUT/gpu.txt" 2>&1
"$TILEFIT_PYTHON" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" > "$OUT/versions.txt"

# Offline choices from the MLA example, then the package's tests on the live device.
"$BIN" probe examples/mla_decode/spec.toml --emit-configs "$OUT/mla.json" > "$OUT/probe-mla.txt" 2>&1
TILEFIT_TEST_MLA_EXPORT="$OUT/mla.json" TILEFIT_TEST_OUT="$OUT" \
    "$TILEFIT_PYTHON" -m unittest discover -v -s python/tests > "$OUT/unittest.txt" 2>&1
echo "unittest rc=$?" >> "$OUT/unittest.txt"

# The plugin: the suite launches the MLA kernel at fp8, BLOCK_N=64, num_stages=2.
TILEFIT_BIN="$BIN" "$TILEFIT_PYTHON" -m pytest -p tilefit.pytest_plugin -v \
    --tilefit-fleet=h100,rtx-pro-6000 python/plugin_suite > "$OUT/pytest.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest.txt"
TILEFIT_BIN="$BIN" "$TILEFIT_PYTHON" -m pytest -p tilefit.pytest_plugin -q \
    --tilefit-fleet=h100,rtx-pro-6000 --tilefit-report-only python/plugin_suite > "$OUT/pytest-report-only.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest-report-only.txt"
echo done
