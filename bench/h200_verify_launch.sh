#!/usr/bin/env bash
# `tilefit verify --launch` at scale on the lent H200: vLLM 0.27.1's whole fused-MoE config folder
# (the 910 configs its files give sm_90), every config compiled, judged by the driver and launched
# once through Triton's JIT on -j workers at once. The baseline of the ratio is the verify of the
# H200's own files (22 files, 119 sm_90 configs) on one worker (`-j 1`: compiles and launches one
# at a time, as launches went before), beside the same subset on every core, in the same run. A
# failed baseline fails the script: no ratio.
#
# Needs field-inputs/ (carried, never committed): vllm-src/ unpacked from
# `pip download vllm==0.27.1 --no-deps` (fused_moe.py and configs/) and vllm-folder.toml, which is
# docs/verification/field-specs/vllm-0.27.1-fused-moe-unmodified.toml pointed at them.
# usage: bench/h200_verify_launch.sh [TILEFIT_BINARY] [PYTHON]
set -eu
cd "$(dirname "$0")/.."
TILEFIT="${1:-target/release/tilefit}"
PYTHON="${2:-python3}"
OUT="${OUT:-bench-out}"
mkdir -p "$OUT"
export TILEFIT_CACHE_DIR="$(mktemp -d)"
SPEC=field-inputs/vllm-folder.toml
SUBSET=field-inputs/vllm-subset.toml
sed 's|configs/\*\.json|configs/*device_name=NVIDIA_H200.json|' "$SPEC" >"$SUBSET"
LOGS="$(mktemp -d)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$OUT/gpu.txt"
echo "cores: $(nproc)" >>"$OUT/gpu.txt"
"$PYTHON" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' >>"$OUT/gpu.txt"

run() { # name, spec, extra args...
    local name="$1" spec="$2"
    shift 2
    local start end code=0
    start=$EPOCHREALTIME
    "$TILEFIT" verify "$spec" --launch --python "$PYTHON" --json "$OUT/$name.json" "$@" \
        >"$LOGS/$name.txt" 2>"$LOGS/$name.err" || code=$?
    end=$EPOCHREALTIME
    echo "{\"run\": \"$name\", \"exit\": $code, \"start\": $start, \"end\": $end}" >>"$LOGS/times.jsonl"
    tail -n 3 "$LOGS/$name.err" >&2
}

: >"$LOGS/times.jsonl"
run subset-j1 "$SUBSET" -j 1
run subset-all "$SUBSET" -j "$(nproc)"
run whole "$SPEC" -j "$(nproc)"

"$PYTHON" - "$OUT" "$LOGS" <<'PY'
import json, sys, os
out, logs = sys.argv[1], sys.argv[2]
times = {t["run"]: t for t in map(json.loads, open(os.path.join(logs, "times.jsonl")))}
for t in times.values():
    t["seconds"] = round(t["end"] - t["start"], 2)
summary = {"times": times}
for name in times:
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        continue
    report = json.load(open(path))
    rows = report.get("rows", report.get("results", []))
    launched = [r.get("launch") for r in rows if r.get("launch") is not None]
    summary[name] = {
        "configs": len(rows),
        "launched": sum(1 for l in launched if l.get("launched")),
        "refused": sum(1 for l in launched if not l.get("launched")),
        "agree": sum(1 for r in rows if r.get("agrees")),
        "disagree": [r["subject"] for r in rows if not r.get("agrees")],
        "refused_launches": [
            (r["subject"], r["shared_bytes"], r["launch"].get("error"))
            for r in rows
            if r.get("launch") is not None and not r["launch"].get("launched")
        ],
        "stderr_tail": open(os.path.join(logs, name + ".err")).read().splitlines()[-4:],
    }
base = times.get("subset-j1", {})
if base.get("exit") != 0 or not os.path.exists(os.path.join(out, "subset-j1.json")):
    json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
    sys.exit(f"the baseline (one launch worker) failed with exit {base.get('exit')}: no ratio")
summary["ratio_subset_all_over_j1"] = times["subset-all"]["seconds"] / base["seconds"]
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
print(json.dumps(summary, indent=2))
PY
