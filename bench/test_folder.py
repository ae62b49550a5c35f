"""A kernel test folder under emulation, cold, before and after: `tilefit capture --module pytest`
of a public test folder (liger-kernel's `test/transformers/` files, from its repository) on four
devices, with a baseline binary and the binary under test, each run with an empty tilefit cache
(every compile cold), on the same machine (a run of each may take longer than one command may,
so each side is its own `run`, and `compare` makes the ratio).

    python3 bench/test_folder.py run TILEFIT PYTHON FOLDER [FILE...] --out SIDE.json
        [--targets rtx-pro-6000,gb10,h100,mi300x]
    python3 bench/test_folder.py compare BASELINE.json TILEFIT.json --out results.json

PYTHON needs torch and pytest, and what the tests import (liger-kernel's: `transformers<5`, on
PYTHONPATH with the folder's `src/`). Each run's wall time, tests (per device), launches and
per-test and per-launch times are written, and `compare` gives the ratio of the binary's wall
time to the baseline's. A run that fails (no report, an exit status above 1, no test run on a
device) fails loudly, and `compare` refuses a baseline that is missing or broken, runs of
different machines, and two runs whose tests' outcomes or launch counts differ: no ratio is made
from a broken or a different run.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

DEFAULT_FILES = [
    "test/transformers/test_rms_norm.py",
    "test/transformers/test_layer_norm.py",
    "test/transformers/test_swiglu.py",
    "test/transformers/test_rope.py",
]


def run(binary, python, folder, files, targets, extra=(), keep=None):
    """One cold run: wall seconds, and the report's counts (the report kept at ``keep``)."""
    with tempfile.TemporaryDirectory() as cache:
        report_path = os.path.join(cache, "report.json")
        env = dict(os.environ, TILEFIT_CACHE_DIR=cache)
        command = [
            binary,
            "capture",
            "--module",
            "pytest",
            "--targets",
            targets,
            "--python",
            python,
            "--json",
            report_path,
            "--fail-on",
            "none",
            "--allow-stopped",
            *extra,
            "--",
            "-p",
            "tilefit.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "-q",
            *files,
        ]
        started = time.monotonic()
        done = subprocess.run(
            command, cwd=folder, env=env, capture_output=True, text=True
        )
        wall = time.monotonic() - started
        if done.returncode > 1 or not os.path.exists(report_path):
            sys.exit(
                f"{binary} failed (exit {done.returncode}): no ratio is made from a broken "
                f"run:\n{done.stderr[-3000:]}"
            )
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
        if keep:
            with open(keep, "w", encoding="utf-8") as f:
                json.dump(report, f)
    devices = {}
    for target in report["targets"]:
        tests = len(target.get("tests", []))
        if tests == 0:
            sys.exit(
                f"{binary}: no test ran on {target['device']['device']}: the run is broken "
                f"({target.get('failures')})"
            )
        devices[target["device"]["device"]] = {
            "tests": tests,
            "launches": sum(launch["count"] for launch in target["launches"]),
            "compiles": len(target["compiles"]),
            "script_seconds": target["script"]["seconds"],
            "outcomes": sorted(
                (t["nodeid"], t["outcome"], t["launches"]) for t in target["tests"]
            ),
        }
    tests = sum(d["tests"] for d in devices.values())
    launches = sum(d["launches"] for d in devices.values())
    return {
        "wall_seconds": round(wall, 2),
        "tests_times_devices": tests,
        "launches": launches,
        "seconds_per_test": round(wall / tests, 4),
        "seconds_per_launch": round(wall / max(launches, 1), 4),
        "exit": done.returncode,
        "devices": devices,
    }


def compare(baseline, tilefit):
    """The ratio of two sides' runs, made only from whole runs of the same machine and tests."""
    if baseline.get("cores") != tilefit.get("cores"):
        sys.exit("the two sides ran on different machines: no ratio is made")
    before, after = baseline["run"], tilefit["run"]
    for device, counts in before["devices"].items():
        theirs = after["devices"].get(device)
        if theirs is None or theirs["outcomes"] != counts["outcomes"]:
            sys.exit(
                f"the two binaries judged {device}'s tests differently: no ratio is made"
            )
    return round(after["wall_seconds"] / before["wall_seconds"], 3)


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run", help="one cold run of one binary")
    one.add_argument("tilefit")
    one.add_argument("python")
    one.add_argument("folder")
    one.add_argument("files", nargs="*")
    one.add_argument("--targets", default="rtx-pro-6000,gb10,h100,mi300x")
    one.add_argument("--out", required=True)
    one.add_argument("--report", help="keep the capture's report here")
    both = sub.add_parser("compare", help="the ratio of two runs' wall times")
    both.add_argument("baseline")
    both.add_argument("tilefit")
    both.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.command == "run":
        files = args.files or DEFAULT_FILES
        result = {
            "cores": os.cpu_count(),
            "binary": args.tilefit,
            "targets": args.targets,
            "files": files,
            "run": run(
                args.tilefit,
                args.python,
                args.folder,
                files,
                args.targets,
                keep=args.report,
            ),
        }
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
        print(json.dumps({k: v for k, v in result["run"].items() if k != "devices"}))
        return
    sides = []
    for path in (args.baseline, args.tilefit):
        # The baseline first: a missing or broken one fails before any ratio.
        if not os.path.exists(path):
            sys.exit(
                f"{path}: no such run (it crashed or was never made): no ratio is made"
            )
        with open(path, encoding="utf-8") as f:
            sides.append(json.load(f))
    ratio = compare(*sides)
    for side in sides:
        for device in side["run"]["devices"].values():
            device.pop("outcomes", None)
    results = {"baseline": sides[0], "tilefit": sides[1], "wall_ratio": ratio}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    print(f"wall ratio (tilefit / baseline): {ratio}")


if __name__ == "__main__":
    main()
