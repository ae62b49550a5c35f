"""tilefit's benchmark harness: the same sweeps through four paths, timed in one run.

  (a) baseline  bench/baseline.py full: a Python loop calling triton.compile, one process
  (b) cold      tilefit probe with an empty result cache (early stop after allocation)
  (c) warm      tilefit probe again on the same cache
  (d) floor     bench/baseline.py floor: the loop with each compile stopped after allocation

Each path runs --repeat times (median and min-max reported); peak memory is the largest resident
set of the process tree (GNU time's %M: the command and the workers it waited for).

usage: python bench/harness.py --tilefit target/release/tilefit --python PY [--jobs N] [--repeat 3]
       [--out bench/results-HOST.json]
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tilefit", default="target/release/tilefit")
    parser.add_argument("--python", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out")
    parser.add_argument("--only", default="abcd", help="paths to run, e.g. bc for a scaling run")
    args = parser.parse_args()
    env = dict(os.environ)
    results = {"machine": {"cpus": os.cpu_count(), "jobs": args.jobs, "uname": " ".join(os.uname())}, "sweeps": {}}
    for name, spec, targets in SWEEPS:
        work = tempfile.mkdtemp(prefix=f"tilefit-bench-{name}-")
        jobs_file = os.path.join(work, "jobs.json")
        probe = [args.tilefit, "probe", spec, "--targets", targets, "--python", args.python]
        subprocess.run(probe + ["--dump-jobs", jobs_file], env=dict(env, TILEFIT_CACHE_DIR=work), check=True,
                       capture_output=True)
        jobs = len(json.load(open(jobs_file)))
        runs = {"a": [], "b": [], "c": [], "d": []}
        peaks = {"a": [], "b": [], "c": [], "d": []}
        for repeat in range(args.repeat):
            cache = tempfile.mkdtemp(prefix="tilefit-bench-cache-")
            for path, command, extra_env in [
                ("a", [args.python, "bench/baseline.py", "full", jobs_file], {"TRITON_CACHE_DIR": tempfile.mkdtemp()}),
                ("b", probe + ["--jobs", str(args.jobs), "--json", os.path.join(work, "cold.json")], {"TILEFIT_CACHE_DIR": cache}),
                ("c", probe + ["--jobs", str(args.jobs), "--json", os.path.join(work, "warm.json")], {"TILEFIT_CACHE_DIR": cache}),
                ("d", [args.python, "bench/baseline.py", "floor", jobs_file], {"TRITON_CACHE_DIR": tempfile.mkdtemp()}),
            ]:
                if path not in args.only:
                    continue
                seconds, peak = timed(command, dict(env, **extra_env))
                runs[path].append(seconds)
                peaks[path].append(peak)
                print(f"{name} run {repeat + 1}: ({path}) {seconds:.2f} s, peak {peak / 1024:.0f} MiB", file=sys.stderr)
        median = {p: statistics.median(v) for p, v in runs.items() if v}
        ratio = lambda x, y: median[x] / median[y] if x in median and y in median else None
        results["sweeps"][name] = {
            "jobs": jobs,
            "seconds": {p: summary(v) for p, v in runs.items() if v},
            "peak_rss_mib": {p: max(v) / 1024 for p, v in peaks.items() if v},
            "ratios": {
                "cold_over_baseline": ratio("b", "a"),
                "warm_over_baseline": ratio("c", "a"),
                # Wall time per job of the cold sweep against the floor's per job, and the CPU
                # time (wall x workers) per job against the floor's: both amortise start-up.
                "cold_per_job_over_floor_per_job": ratio("b", "d"),
                "cold_cpu_per_job_over_floor": (median["b"] * args.jobs / median["d"]) if "b" in median and "d" in median else None,
            },
        }
    total = {p: sum(results["sweeps"][n]["seconds"][p]["median"] for n, _, _ in SWEEPS)
             for p in "abcd" if all(p in results["sweeps"][n]["seconds"] for n, _, _ in SWEEPS)}
    results["total"] = {"seconds": total}
    for label, x, y in [("cold_over_baseline", "b", "a"), ("warm_over_baseline", "c", "a"), ("cold_over_floor", "b", "d")]:
        if x in total and y in total:
            results["total"][label] = total[x] / total[y]
    print(json.dumps(results, indent=2))
    if args.out:
        with open(args.out, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
