#!/usr/bin/env bash
# The harness on a many-core machine (the lent H200 box: the work is CPU-bound, the GPU idles):
# the cold and warm sweeps at 16, 8, 4 and 1 workers, and a 1,280-job sweep for the pool's peak
# memory. The single-process paths (baseline and floor) take minutes there: run them with
# `bench/harness.py --only ad` when there is time. Writes JSON into $OUT.
# usage: bench/h200.sh [TILEFIT_BINARY] [PYTHON]
set -eu
cd "$(dirname "$0")/.."
TILEFIT="${1:-target/release/tilefit}"
PYTHON="${2:-python3}"
OUT="${OUT:-bench-out}"
mkdir -p "$OUT"
for jobs in $(nproc) 8 4 1; do
  "$PYTHON" bench/harness.py --tilefit "$TILEFIT" --python "$PYTHON" --jobs "$jobs" --repeat 1 --only bc --out "$OUT/jobs-$jobs.json" > /dev/null
done
cache=$(mktemp -d)
"$PYTHON" - "$TILEFIT" "$PYTHON" "$cache" "$(nproc)" > "$OUT/sweep1280.json" <<'PY'
import json, resource, subprocess, sys, time
tilefit, python, cache, cores = sys.argv[1:5]
started = time.perf_counter()
done = subprocess.run([tilefit, "probe", "bench/sweep1280.toml", "--python", python, "--jobs", cores,
                       "--json", cache + "/report.json"], env={"TILEFIT_CACHE_DIR": cache, "PATH": "/usr/bin:/bin"},
                      capture_output=True, text=True)
seconds = time.perf_counter() - started
report = json.load(open(cache + "/report.json"))
print(json.dumps({"jobs": report["stats"]["jobs"], "compiled": report["stats"]["compiled"], "seconds": seconds,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  "exit": done.returncode}))
PY
