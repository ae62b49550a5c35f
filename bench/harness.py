"""tilefit's benchmark harness: the same sweeps through five paths, timed in one run.

  (a) baseline  bench/baseline.py full: a Python loop calling triton.compile, one process
  (b) cold      tilefit probe with an empty result cache, workers forked from a zygote per arch
  (s) spawn     the same with --worker-start spawn: a fresh Python per worker (the old path)
  (c) warm      tilefit probe again on the same cache
  (d) floor     bench/baseline.py floor: the loop with each compile stopped after allocation

Each path runs --repeat times (median and min-max reported); peak memory is the largest resident
set of the process tree (the command and the workers it waited for). The cold paths run at every
worker count of --workers; each cold run's report gives its workers' start-up times (the first
worker, a zygote's warm-up included, and the median and slowest later one). The forked and spawned
cold runs must give the same bytes: the harness fails loudly when they differ, as when the
baseline fails.

usage: python bench/harness.py --tilefit target/release/tilefit --python PY [--workers 16,8,4]
       [--repeat 3] [--only abscd] [--out bench/results-HOST.json]
Run from the repository root. Ratios are what to read: these machines are noisy.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SWEEPS = [
    # (name, spec, targets): at least 48 matmul configs x 2 targets, and the MLA example x 4.
    ("matmul", "examples/matmul/spec.toml", "h100,rtx-pro-6000"),
    ("mla", "examples/mla_decode/spec.toml", "h100,b200,rtx-pro-6000,mi300x"),
]


# Runs a command and writes the peak resident set (KiB) of it and every descendant it waited for
# (RUSAGE_CHILDREN) to the file named first: what GNU time's %M reports, without needing it.
PEAK = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[2:])\n"
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
    "sys.exit(done.returncode)\n"
)


def timed(command, env):
    """(seconds, peak RSS in KiB) of one command and the processes it started."""
    with tempfile.NamedTemporaryFile("r") as stats:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", PEAK, stats.name] + command, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seconds = time.perf_counter() - started
        if done.returncode not in (0, 1):
            sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        peak = int(stats.read().strip() or 0)
    return seconds, peak


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def sizes_of(report_path):
    """(config, arch) -> bytes (or the error kind) of a probe report: what must not change."""
    report = json.load(open(report_path))
    return {json.dumps([r["config"], r["arch"]], sort_keys=True): r["shared_bytes"] if r["shared_bytes"] is not None else (r.get("error") or {}).get("kind")
            for r in report["results"]}, report["stats"].get("workers")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tilefit", default="target/release/tilefit")
    parser.add_argument("--python", required=True)
    parser.add_argument("--workers", default=str(os.cpu_count()), help="worker counts for the cold paths, e.g. 16,8,4")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out")
    parser.add_argument("--only", default="abscd", help="paths to run, e.g. bs for a scaling run")
    args = parser.parse_args()
    counts = [int(c) for c in args.workers.split(",")]
    env = dict(os.environ)
    results = {"machine": {"cpus": os.cpu_count(), "workers": counts, "uname": " ".join(os.uname())}, "sweeps": {}}
    for name, spec, targets in SWEEPS:
        work = tempfile.mkdtemp(prefix=f"tilefit-bench-{name}-")
        jobs_file = os.path.join(work, "jobs.json")
        probe = [args.tilefit, "probe", spec, "--targets", targets, "--python", args.python]
        subprocess.run(probe + ["--dump-jobs", jobs_file], env=dict(env, TILEFIT_CACHE_DIR=work), check=True,
                       capture_output=True)
        jobs = len(json.load(open(jobs_file)))
        runs, peaks, starts = {}, {}, {}
        reference = None
        for repeat in range(args.repeat):
            plan = [("a", [args.python, "bench/baseline.py", "full", jobs_file], {"TRITON_CACHE_DIR": tempfile.mkdtemp()}, None)]
            for count in counts:
                cache = tempfile.mkdtemp(prefix="tilefit-bench-cache-")
                spawn_cache = tempfile.mkdtemp(prefix="tilefit-bench-cache-")
                jobs_flag = ["--jobs", str(count)]
                plan += [
                    (f"b{count}", probe + jobs_flag + ["--json", os.path.join(work, f"cold{count}.json")], {"TILEFIT_CACHE_DIR": cache}, f"cold{count}.json"),
                    (f"s{count}", probe + jobs_flag + ["--worker-start", "spawn", "--json", os.path.join(work, f"spawn{count}.json")], {"TILEFIT_CACHE_DIR": spawn_cache}, f"spawn{count}.json"),
                    (f"c{count}", probe + jobs_flag + ["--json", os.path.join(work, f"warm{count}.json")], {"TILEFIT_CACHE_DIR": cache}, None),
                ]
            plan.append(("d", [args.python, "bench/baseline.py", "floor", jobs_file], {"TRITON_CACHE_DIR": tempfile.mkdtemp()}, None))
            for path, command, extra_env, report in plan:
                if path[0] not in args.only:
                    continue
                seconds, peak = timed(command, dict(env, **extra_env))
                runs.setdefault(path, []).append(seconds)
                peaks.setdefault(path, []).append(peak)
                line = f"{name} run {repeat + 1}: ({path}) {seconds:.2f} s, peak {peak / 1024:.0f} MiB"
                if report:
                    sizes, workers = sizes_of(os.path.join(work, report))
                    if reference is None:
                        reference = sizes
                    elif sizes != reference:
                        differ = [k for k in reference if reference.get(k) != sizes.get(k)]
                        sys.exit(f"{path} gave other bytes than the first cold run on {len(differ)} jobs: {differ[:3]}")
                    starts.setdefault(path, []).append(workers)
                    if workers:
                        line += (f", workers {workers.get('start')}: first {workers.get('first_start_s') or 0:.3f} s, later"
                                 f" {workers.get('later_start_s') or 0:.3f} s (max {workers.get('later_start_max_s') or 0:.3f} s)")
                        if workers.get("fallback") and path.startswith("b"):
                            line += f", FELL BACK: {workers['fallback']}"
                print(line, file=sys.stderr)
        median = {p: statistics.median(v) for p, v in runs.items()}
        ratio = lambda x, y: median[x] / median[y] if x in median and y in median else None
        results["sweeps"][name] = {
            "jobs": jobs,
            "seconds": {p: summary(v) for p, v in runs.items()},
            "peak_rss_mib": {p: max(v) / 1024 for p, v in peaks.items()},
            "workers": starts,
            "bytes_identical_fork_spawn": reference is not None,
            "ratios": {f"{kind}{count}_over_baseline": ratio(f"{kind}{count}", "a") for count in counts for kind in "bsc"},
        }
    total = {}
    for path in sorted({p for n in results["sweeps"].values() for p in n["seconds"]}):
        if all(path in n["seconds"] for n in results["sweeps"].values()):
            total[path] = sum(n["seconds"][path]["median"] for n in results["sweeps"].values())
    results["total"] = {"seconds": total}
    if "a" in total:
        for path, seconds in total.items():
            if path != "a":
                results["total"][f"{path}_over_baseline"] = seconds / total["a"]
    if "d" in total:
        for path, seconds in total.items():
            if path[0] in "bs":
                results["total"][f"{path}_over_floor"] = seconds / total["d"]
    print(json.dumps(results, indent=2))
    if args.out:
        with open(args.out, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
