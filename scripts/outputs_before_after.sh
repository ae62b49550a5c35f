#!/usr/bin/env bash
# The outputs of probe, capture and --emit-files on the bundled examples, with run-dependent
# numbers (seconds, worker timings, scratch paths) masked, so two builds can be compared byte for
# byte:
#
#   scripts/outputs_before_after.sh OLD_TILEFIT /tmp/old
#   scripts/outputs_before_after.sh target/release/tilefit /tmp/new
#   diff -r /tmp/old /tmp/new
#
# Needs TILEFIT_PYTHON (an environment with Triton) and TILEFIT_EMULATE_PYTHON (one with torch and
# Triton) as the test suite does. Each run starts from an empty cache folder of its own.
set -u
bin=$(realpath "$1"); out=$2
here=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"; mkdir -p "$out"
export TILEFIT_CACHE_DIR="$out/.cache"
py=${TILEFIT_PYTHON:?set TILEFIT_PYTHON}; epy=${TILEFIT_EMULATE_PYTHON:?set TILEFIT_EMULATE_PYTHON}
cd "$here"
mask() {
  sed -E -e 's/"(seconds|first_start_s|later_start_s|later_start_max_s|arch_warm_max_s|compile_seconds|elapsed_s)": [0-9.e+-]+/"\1": 0/g' \
    -e 's/"started": [0-9]+/"started": 0/g' -e 's#[^" ]*/scratch/[A-Za-z-]+-[0-9]+-[0-9]+#SCRATCH#g' \
    -e 's/[0-9]+\.[0-9]+ ?s\b/N s/g' -e "s#$out#OUT#g"
}
run() { # name, args...
  local name=$1; shift
  "$bin" "$@" > "$out/$name.out" 2> "$out/$name.err"; echo "exit $?" >> "$out/$name.out"
  mask < "$out/$name.out" > "$out/$name.out.m" && mv "$out/$name.out.m" "$out/$name.out"
  grep -v "compiled\|^\[" "$out/$name.err" | mask > "$out/$name.err.m"; mv "$out/$name.err.m" "$out/$name.err"
}
run mla probe examples/mla_decode/spec.toml --python "$py"
run mla-md probe examples/mla_decode/spec.toml --python "$py" --output-format markdown
run matmul probe examples/matmul/autotune.toml --python "$py" --json "$out/matmul.json"
run moe probe examples/moe/spec.toml --python "$py" --emit-files "$out/moe-files" --json "$out/moe.json"
run capture capture crates/tilefit/tests/fixtures/capture/kernels.py --targets h100,rtx-pro-6000,mi300x \
  --python "$epy" --json "$out/capture.json"
run capture-md capture crates/tilefit/tests/fixtures/capture/kernels.py --targets rtx-pro-6000 \
  --python "$epy" --output-format markdown --emit-spec "$out/specs"
for f in "$out"/*.json; do mask < "$f" > "$f.m" && mv "$f.m" "$f"; done
rm -rf "$out/.cache"
