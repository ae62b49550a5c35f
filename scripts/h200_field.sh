#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: the field's inputs.
#  1. torch.compile runs (scripts/field_workload.py torch), then `tilefit replay` with NO argument:
#     it must find the run's kernels in Inductor's cache; the H100 column is compared with the bytes
#     the machine recorded.
#  2. Triton launches under tritonparse's tracing, then `tilefit replay TRACE.ndjson`.
#  3. `tilefit verify --launch` on the engine-shaped launch fixture (dtype constexpr, None
#     arguments, heuristics): the predicted bytes against the driver and a real launch.
#  4. Engine config folders, when their specs are given (ENGINE_SPECS="a/spec.toml b/spec.toml";
#     the engines' files are third-party and stay out of the repository).
# Writes JSON and logs into $OUT (default ./gpu-field).
# usage: scripts/h200_field.sh [TILEFIT_BINARY] [PYTHON]
set -u
cd "$(dirname "$0")/.."
TILEFIT="${1:-target/release/tilefit}"
PYTHON="${2:-python3}"
OUT="${OUT:-gpu-field}"
mkdir -p "$OUT"
export TILEFIT_CACHE_DIR="$(mktemp -d)"
unset TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR
export USER="${USER:-$(id -un)}"
jobs=$(nproc)
log="$OUT/field.log"
: > "$log"

echo "--- 1. torch.compile, then replay with no argument" | tee -a "$log"
"$PYTHON" scripts/field_workload.py torch >> "$log" 2>&1; echo "torch workload exit $?" | tee -a "$log"
"$TILEFIT" replay --list >> "$log" 2>&1
"$TILEFIT" replay --python "$PYTHON" --jobs "$jobs" --targets h100,rtx-pro-6000,rtx-4090 \
  --json "$OUT/replay_inductor.json" > "$OUT/replay_inductor.txt" 2>&1
echo "replay (no argument) exit $?" | tee -a "$log"

echo "--- 2. tritonparse trace, then replay it" | tee -a "$log"
trace_dir=$(mktemp -d)
"$PYTHON" scripts/field_workload.py trace "$trace_dir" >> "$log" 2>&1; echo "trace workload exit $?" | tee -a "$log"
trace=$(ls "$trace_dir"/*.ndjson 2>/dev/null | head -n 1)
if [ -n "$trace" ]; then
  "$TILEFIT" replay "$trace" --python "$PYTHON" --jobs "$jobs" --targets h100,rtx-pro-6000 \
    --json "$OUT/replay_trace.json" > "$OUT/replay_trace.txt" 2>&1
  echo "replay (trace) exit $?" | tee -a "$log"
else
  echo "no trace written: $(ls "$trace_dir")" | tee -a "$log"
fi

echo "--- 3. verify --launch on the engine-shaped launch" | tee -a "$log"
"$TILEFIT" verify crates/tilefit/tests/fixtures/field/moe_launch.toml --launch --python "$PYTHON" \
  --jobs "$jobs" --json "$OUT/verify_launch.json" > "$OUT/verify_launch.txt" 2>&1
echo "verify --launch exit $?" | tee -a "$log"

echo "--- 4. engine config folders" | tee -a "$log"
for spec in ${ENGINE_SPECS:-}; do
  name=$(basename "$(dirname "$spec")")
  start=$(date +%s)
  "$TILEFIT" probe "$spec" --python "$PYTHON" --jobs "$jobs" --json "$OUT/folder_$name.json" \
    > "$OUT/folder_$name.txt" 2>&1
  echo "probe $name exit $? in $(( $(date +%s) - start )) s" | tee -a "$log"
done
tail -n 5 "$OUT"/*.txt
# What comes back from a lent machine is a handful of files: the text outputs travel as one archive.
(cd "$OUT" && tar czf texts.tgz ./*.txt && rm -f ./*.txt)
