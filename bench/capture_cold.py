"""Capture's cold cost against its own work: a cold `tilefit capture` (empty cache) of a library
workload with at least 50 distinct autotune configs on one target, against the compile work it
had to do (the workers' compile seconds, summed) and the script's own time under emulation.

    python3 bench/capture_cold.py TILEFIT PYTHON [SCRIPT] [--target h100] [--out results.json]

PYTHON needs torch, Triton and the library (FlagGems for the bundled script:
`pip install flag-gems`). The bound the capture is held to: wall <= 2 x compile work + script.
A run that does not finish, or compiles fewer than 50 configs, fails loudly: no ratio is made
from a broken baseline.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tilefit")
    parser.add_argument("python")
    parser.add_argument(
        "script",
        nargs="?",
        default=os.path.join(HERE, "capture", "flag_gems_forward.py"),
    )
    parser.add_argument("--target", default="h100")
    parser.add_argument("--out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        report_path = os.path.join(cache, "report.json")
        # Cold for the library too: FlagGems keeps its autotune choices in ~/.flaggems, and a
        # warm one makes its launches try one config instead of the list.
        env = dict(
            os.environ,
            TILEFIT_CACHE_DIR=cache,
            FLAGGEMS_CACHE_DIR=os.path.join(cache, "flaggems"),
        )
        started = time.monotonic()
        run = subprocess.run(
            [
                args.tilefit,
                "capture",
                args.script,
                "--targets",
                args.target,
                "--python",
                args.python,
                "--json",
                report_path,
                "--fail-on",
                "none",
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - started
        if run.returncode != 0 or not os.path.exists(report_path):
            sys.exit(
                f"the capture failed (exit {run.returncode}): {run.stderr[-2000:]}"
            )
        with open(report_path) as f:
            report = json.load(f)
    (target,) = report["targets"]
    compiles = target["compiles"]
    seconds = [(c.get("result") or {}).get("compile_seconds") for c in compiles]
    if len(compiles) < 50 or any(s is None for s in seconds):
        sys.exit(
            f"the baseline is broken: {len(compiles)} compiles, {seconds.count(None)} without a time"
        )
    compile_work = sum(seconds)
    script = target["script"]["seconds"]
    bound = 2 * compile_work + script
    result = {
        "tilefit": subprocess.run(
            [args.tilefit, "--version"], capture_output=True, text=True
        ).stdout.strip(),
        "script": os.path.basename(args.script),
        "target": args.target,
        "cores": os.cpu_count(),
        "compiles": len(compiles),
        "autotuned_launches": sum(
            1 for launch in target["launches"] if launch.get("autotune")
        ),
        "wall_s": round(wall, 2),
        "compile_work_s": round(compile_work, 2),
        "script_s": round(script, 2),
        "bound_s": round(bound, 2),
        "wall_over_bound": round(wall / bound, 3),
        "pools": (report.get("workers") or {}).get("pools"),
        "within_bound": wall <= bound,
    }
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    sys.exit(0 if result["within_bound"] else 1)


if __name__ == "__main__":
    main()
