"""tilefit's benchmark harness: the same sweeps through five paths, timed in one run.

  (a) baseline  bench/baseline.py full: a Python loop calling triton.compile, one process
  (b) cold      tilefit probe with an empty result cache, workers forked from a zygote per arch
  (s) spawn     the same with --worker-start spawn: a fresh Python per worker (the old path)
  (c) warm      tilefit probe again on the same cache
  (d) floor     bench/baseline.py floor: the loop with each compile stopped after allocation

Each path runs --repeat times (median and min-max reported); peak memory is the largest resident
set of the process tree (the command and the workers it waited for). The cold paths run at every
worker count of --workers; each cold run's report gives its workers' start-up times (the first
worker, a zygote's warm-up included, and the median and slowest later one).

Every ratio comes from runs that worked, each judged by what it is; the harness stops with a
non-zero exit and the reason otherwise:
  - the baseline and the floor must exit 0 and print their JSON line with every job of the sweep,
    and the bytes they compiled must be the cold run's, job by job;
  - a probe may exit 0, or 1 (its gate) only with a complete report whose results cover every job;
  - the forked and spawned cold runs must give the same bytes.

The worker the baseline imports comes from the binary measured (`tilefit toolchain worker`), so
the harness needs the release binary, bench/ and examples/, not the source tree.

usage: python bench/harness.py --tilefit target/release/tilefit --python PY [--workers 16,8,4]
       [--repeat 3] [--only abscd] [--out bench/results-HOST.json]
       [--sweep NAME=SPEC@TARGETS ...] [--baseline bench/baseline.py] [--fail-on RULES]
Run from the folder holding bench/ and examples/. Ratios are what to read: these machines are
noisy.
"""

import argparse
import json
import os
import shutil
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


class Failed(Exception):
    """A run that did not work: what the harness stops with."""


def timed(command, env):
    """(seconds, peak RSS in KiB, exit status, stdout, stderr) of one command and the processes
    it started."""
    with tempfile.NamedTemporaryFile("r") as stats:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", PEAK, stats.name] + command,
            env=env,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
        peak = int(stats.read().strip() or 0)
    return seconds, peak, done.returncode, done.stdout, done.stderr


def failed(command, why, stderr=""):
    tail = f"\n{stderr[-2000:]}" if stderr.strip() else ""
    return Failed(f"{' '.join(command)}: {why}{tail}")


def loop_result(command, status, stdout, stderr, jobs):
    """The JSON line of a baseline or floor run that worked: exit 0, every job compiled."""
    if status != 0:
        raise failed(command, f"exited {status}; a baseline must exit 0", stderr)
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        line = json.loads(lines[-1])
    except (IndexError, ValueError):
        raise failed(command, "printed no JSON line", stderr) from None
    if line.get("jobs") != jobs or len(line.get("sizes") or []) != jobs:
        raise failed(
            command,
            f"compiled {line.get('jobs')} jobs ({len(line.get('sizes') or [])} sizes), "
            f"not the sweep's {jobs}",
            stderr,
        )
    return line


def probe_result(command, status, stderr, report_path, jobs):
    """A probe run that worked: exit 0, or 1 (the gate) with a complete report of every job."""
    if status not in (0, 1):
        raise failed(command, f"exited {status}", stderr)
    try:
        report = json.load(open(report_path))
    except (OSError, ValueError) as error:
        raise failed(
            command,
            f"exited {status} and its report {report_path} cannot be read ({error})",
            stderr,
        ) from None
    stats = report.get("stats") or {}
    results = report.get("results") or []
    if not stats.get("complete") or stats.get("jobs") != jobs or len(results) != jobs:
        raise failed(
            command,
            f"exited {status} with an incomplete report: {len(results)} results of "
            f"{jobs} jobs, complete={stats.get('complete')}",
            stderr,
        )
    return report


def baseline_differences(jobs, sizes, report):
    """Where a loop's sizes (one per job, in the jobs file's order) and a probe report's bytes
    (its results in the same plan order) differ: (job index, what the loop gave, what tilefit gave).
    A result that is not its job's (another arch, another config) is a difference too."""
    differ = []
    for index, (job, size, result) in enumerate(zip(jobs, sizes, report["results"])):
        values = dict(job["constexprs"], **job["options"])
        same_job = result["arch"] == job["target"]["arch"] and all(
            values[key] == value
            for key, value in result["config"].items()
            if key in values
        )
        if not same_job:
            differ.append(
                (
                    index,
                    f"job {job['target']['arch']} {values}",
                    f"result {result['arch']} {result['config']}",
                )
            )
            continue
        loop_bytes = size if isinstance(size, int) else None
        if loop_bytes != result["shared_bytes"]:
            differ.append((index, size, bytes_or_error(result)))
    return differ


def summary(values):
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "runs": values,
    }


def bytes_or_error(result):
    """A probe result's bytes, or the kind of its error where it has none."""
    if result["shared_bytes"] is not None:
        return result["shared_bytes"]
    return (result.get("error") or {}).get("kind")


def sizes_of(report):
    """(config, arch) -> bytes (or the error kind) of a probe report: what must not change."""
    return {
        json.dumps([r["config"], r["arch"]], sort_keys=True): bytes_or_error(r)
        for r in report["results"]
    }, report["stats"].get("workers")


def parse_sweeps(given):
    """`NAME=SPEC@TARGETS` each, or the default sweeps."""
    if not given:
        return SWEEPS
    sweeps = []
    for text in given:
        name, _, rest = text.partition("=")
        spec, _, targets = rest.partition("@")
        if not (name and spec and targets):
            sys.exit(
                f"--sweep {text}: write NAME=SPEC@TARGETS, e.g. matmul=examples/matmul/spec.toml@h100"
            )
        sweeps.append((name, spec, targets))
    return sweeps


def run_sweep(args, name, spec, targets, counts, env):
    """One sweep through every path asked for, --repeat times: its entry of the results."""
    work = tempfile.mkdtemp(prefix=f"{name}-", dir=args.scratch)
    jobs_file = os.path.join(work, "jobs.json")
    probe = [args.tilefit, "probe", spec, "--targets", targets, "--python", args.python]
    gate = ["--fail-on", args.fail_on] if args.fail_on else []
    dump = probe + ["--dump-jobs", jobs_file]
    done = subprocess.run(
        dump, env=dict(env, TILEFIT_CACHE_DIR=work), capture_output=True, text=True
    )
    if done.returncode != 0 or not os.path.exists(jobs_file):
        raise failed(
            dump, f"exited {done.returncode} without the jobs file", done.stderr
        )
    jobs = json.load(open(jobs_file))
    runs, peaks, starts, loops = {}, {}, {}, {}
    reference = None
    for repeat in range(args.repeat):
        plan = [
            (
                "a",
                [args.python, args.baseline, "full", jobs_file],
                {"TRITON_CACHE_DIR": tempfile.mkdtemp(dir=work)},
                None,
            )
        ]
        for count in counts:
            cache = tempfile.mkdtemp(prefix="cache-", dir=work)
            spawn_cache = tempfile.mkdtemp(prefix="cache-", dir=work)
            jobs_flag = gate + ["--jobs", str(count)]
            plan += [
                (
                    f"b{count}",
                    probe
                    + jobs_flag
                    + ["--json", os.path.join(work, f"cold{count}.json")],
                    {"TILEFIT_CACHE_DIR": cache},
                    f"cold{count}.json",
                ),
                (
                    f"s{count}",
                    probe
                    + jobs_flag
                    + [
                        "--worker-start",
                        "spawn",
                        "--json",
                        os.path.join(work, f"spawn{count}.json"),
                    ],
                    {"TILEFIT_CACHE_DIR": spawn_cache},
                    f"spawn{count}.json",
                ),
                (
                    f"c{count}",
                    probe
                    + jobs_flag
                    + ["--json", os.path.join(work, f"warm{count}.json")],
                    {"TILEFIT_CACHE_DIR": cache},
                    f"warm{count}.json",
                ),
            ]
        plan.append(
            (
                "d",
                [args.python, args.baseline, "floor", jobs_file],
                {"TRITON_CACHE_DIR": tempfile.mkdtemp(dir=work)},
                None,
            )
        )
        for path, command, extra_env, report_name in plan:
            if path[0] not in args.only:
                continue
            seconds, peak, status, stdout, stderr = timed(
                command, dict(env, **extra_env)
            )
            line = f"{name} run {repeat + 1}: ({path}) {seconds:.2f} s, peak {peak / 1024:.0f} MiB"
            if report_name is None:
                loops[path] = loop_result(command, status, stdout, stderr, len(jobs))
            else:
                report = probe_result(
                    command, status, stderr, os.path.join(work, report_name), len(jobs)
                )
                sizes, workers = sizes_of(report)
                if reference is None:
                    reference = (path, report, sizes)
                elif sizes != reference[2]:
                    differ = [
                        k for k in reference[2] if reference[2].get(k) != sizes.get(k)
                    ]
                    raise Failed(
                        f"{path} gave other bytes than {reference[0]} on {len(differ)} jobs: {differ[:3]}"
                    )
                if path[0] != "c":
                    starts.setdefault(path, []).append(workers)
                if workers and path[0] != "c":
                    line += (
                        f", workers {workers.get('start')}: first {workers.get('first_start_s') or 0:.3f} s, later"
                        f" {workers.get('later_start_s') or 0:.3f} s (max {workers.get('later_start_max_s') or 0:.3f} s)"
                    )
                    if workers.get("fallback") and path.startswith("b"):
                        line += f", FELL BACK: {workers['fallback']}"
            runs.setdefault(path, []).append(seconds)
            peaks.setdefault(path, []).append(peak)
            print(line, file=sys.stderr)
        # The loops' bytes against tilefit's, job by job, once a probe has given them.
        for path, loop in loops.items():
            if reference is None:
                continue
            differ = baseline_differences(jobs, loop["sizes"], reference[1])
            if differ:
                shown = "; ".join(
                    f"job {i}: {path} {a}, {reference[0]} {b}" for i, a, b in differ[:3]
                )
                raise Failed(
                    f"{path} ({args.baseline}) compiled other bytes than tilefit's {reference[0]} on "
                    f"{len(differ)} of {len(jobs)} jobs: {shown}"
                )
    median = {p: statistics.median(v) for p, v in runs.items()}

    def ratio(x, y):
        return median[x] / median[y] if x in median and y in median else None

    return {
        "jobs": len(jobs),
        "seconds": {p: summary(v) for p, v in runs.items()},
        "peak_rss_mib": {p: max(v) / 1024 for p, v in peaks.items()},
        "workers": starts,
        "bytes_identical_fork_spawn": reference is not None,
        "baseline_bytes_checked_against": reference[0]
        if reference is not None and loops
        else None,
        "sizes_sha": {p: loop["sizes_sha"] for p, loop in loops.items()},
        "ratios": {
            f"{kind}{count}_over_baseline": ratio(f"{kind}{count}", "a")
            for count in counts
            for kind in "bsc"
        },
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tilefit", default="target/release/tilefit")
    parser.add_argument("--python", required=True)
    parser.add_argument(
        "--workers",
        default=str(os.cpu_count()),
        help="worker counts for the cold paths, e.g. 16,8,4",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out")
    parser.add_argument(
        "--only", default="abscd", help="paths to run, e.g. bs for a scaling run"
    )
    parser.add_argument(
        "--fail-on",
        help="the gate the probes run with (`--fail-on RULES`), as CI runs them",
    )
    parser.add_argument(
        "--sweep",
        action="append",
        help="NAME=SPEC@TARGETS instead of the default sweeps (repeatable)",
    )
    parser.add_argument(
        "--baseline",
        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "baseline.py"),
        help="the baseline and floor script",
    )
    args = parser.parse_args()
    args.tilefit = (
        os.path.abspath(args.tilefit) if os.sep in args.tilefit else args.tilefit
    )
    counts = [int(c) for c in args.workers.split(",")]
    # The baseline imports the worker of the binary measured.
    env = dict(os.environ, TILEFIT_BIN=args.tilefit)
    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "workers": counts,
            "uname": " ".join(os.uname()),
        },
        "sweeps": {},
    }
    # Every run's caches, reports and jobs in one folder, removed at the end.
    args.scratch = tempfile.mkdtemp(prefix="tilefit-bench-")
    try:
        for name, spec, targets in parse_sweeps(args.sweep):
            results["sweeps"][name] = run_sweep(args, name, spec, targets, counts, env)
    except Failed as failure:
        sys.exit(f"bench/harness.py: stopped, no results written: {failure}")
    finally:
        shutil.rmtree(args.scratch, ignore_errors=True)
    total = {}
    for path in sorted({p for n in results["sweeps"].values() for p in n["seconds"]}):
        if all(path in n["seconds"] for n in results["sweeps"].values()):
            total[path] = sum(
                n["seconds"][path]["median"] for n in results["sweeps"].values()
            )
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
