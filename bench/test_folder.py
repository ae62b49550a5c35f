"""A kernel test folder under emulation, cold, before and after: `tilefit capture --module pytest`
of a public test folder (liger-kernel's `test/transformers/` files, from its repository) on four
devices, with a baseline binary and the binary under test, each run with an empty tilefit cache
(every compile cold), in the same run of this script, alternately.

    python3 bench/test_folder.py BASELINE_TILEFIT TILEFIT PYTHON FOLDER [FILE...]
        [--targets rtx-pro-6000,gb10,h100,mi300x] [--rounds 1] [--out results.json]

PYTHON needs torch and pytest, and what the tests import (liger-kernel's: `transformers<5`, on
PYTHONPATH with the folder's `src/`). Each run's wall time, tests (per device), launches and
per-test and per-launch times are written, and the ratio of the binary's wall time to the
baseline's. A run that fails (no report, an exit status above 1, no test run on a device) fails
this script loudly, the baseline's first: no ratio is made from a broken run. The two binaries
must judge the same launches: a difference in launches or tests is a failure too.
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


def run(binary, python, folder, files, targets):
    """One cold run: wall seconds, and the report's counts."""
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("baseline")
    parser.add_argument("tilefit")
    parser.add_argument("python")
    parser.add_argument("folder")
    parser.add_argument("files", nargs="*")
    parser.add_argument("--targets", default="rtx-pro-6000,gb10,h100,mi300x")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out")
    args = parser.parse_args()
    files = args.files or DEFAULT_FILES
    rounds = []
    for _ in range(args.rounds):
        # The baseline first: when it breaks, nothing else is measured.
        before = run(args.baseline, args.python, args.folder, files, args.targets)
        after = run(args.tilefit, args.python, args.folder, files, args.targets)
        for device, counts in before["devices"].items():
            theirs = after["devices"].get(device)
            if theirs is None or theirs["outcomes"] != counts["outcomes"]:
                sys.exit(
                    f"the two binaries judged {device}'s tests differently: no ratio is made"
                )
        rounds.append(
            {
                "baseline": before,
                "tilefit": after,
                "wall_ratio": round(after["wall_seconds"] / before["wall_seconds"], 3),
            }
        )
    for r in rounds:
        for side in ("baseline", "tilefit"):
            for d in r[side]["devices"].values():
                d.pop("outcomes")
    results = {
        "cores": os.cpu_count(),
        "targets": args.targets,
        "files": files,
        "rounds": rounds,
    }
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
