"""The truth for `pytest --tilefit-emulate` on a real GPU: a test folder run for real, every
compile recorded with the test that made it through Triton's own hook
(`knobs.runtime.jit_post_compile_hook`: constexprs, options, 16-divisible arguments, and the
compiled kernel's `metadata.shared`); then compared, test by test, with what `tilefit capture
--module pytest --json` reported for the same device.

    python3 -m pytest -p pytest_truth TESTS...      # with scripts/ on PYTHONPATH and
                                                    # TILEFIT_TRUTH_OUT=REAL.json
    python3 scripts/pytest_truth.py compare REAL.json CAPTURE.json DEVICE   # a Markdown table

The comparison exits 1 when a distinct compile of the real run (per test) has no compile in the
capture for that test with the same kernel, constexprs, options, 16-divisible arguments and bytes.
"""

import json
import os
import sys

from capture_truth import _dtype_name, compiled

_STATE = {"test": None, "compiles": [], "tests": {}}


def _post_compile(key, repr, fn, compile, is_manual_warmup, already_compiled):
    _STATE["compiles"].append({"test": _STATE["test"], **compiled(key, fn, compile)})


def pytest_configure(config):
    from triton import knobs

    knobs.runtime.jit_post_compile_hook = _post_compile


def pytest_runtest_protocol(item, nextitem):
    _STATE["test"] = item.nodeid


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _STATE["tests"][report.nodeid] = report.outcome


def pytest_sessionfinish(session, exitstatus):
    import torch
    import triton

    out = os.environ.get("TILEFIT_TRUTH_OUT", "truth.json")
    with open(out, "w") as f:
        json.dump(
            {
                "device": torch.cuda.get_device_name(),
                "torch": torch.__version__,
                "triton": triton.__version__,
                "tests": _STATE["tests"],
                "compiles": _STATE["compiles"],
            },
            f,
            indent=1,
        )


def _key(kernel, constexprs, options, divisible):
    return json.dumps(
        [
            kernel,
            {k: _dtype_name(v) for k, v in constexprs.items()},
            {k: options[k] for k in ("num_warps", "num_stages") if k in options},
            sorted(divisible),
        ],
        sort_keys=True,
    )


def _test_name(nodeid):
    return nodeid.split("/")[-1]


def compare(real_file, capture_file, device):
    real = json.load(open(real_file))
    capture = json.load(open(capture_file))
    target = next(t for t in capture["targets"] if t["device"]["device"] == device)
    captured = {}
    for launch in target["launches"]:
        for index in launch["compiles"]:
            c = target["compiles"][index]
            result = c.get("result") or {}
            # The options the compile used: the launch's, and the defaults it left to Triton.
            options = {**(result.get("config") or {}), **c["options"]}
            key = _key(
                c["kernel"]["function"],
                c["constexprs"],
                options,
                result.get("divisible_by_16", []),
            )
            for test in launch["calls"]:
                captured.setdefault(_test_name(test), {})[key] = result.get(
                    "shared_bytes"
                )
    distinct = {}
    for r in real["compiles"]:
        key = _key(r["kernel"], r["constexprs"], r["options"], r["divisible_by_16"])
        distinct.setdefault((_test_name(r["test"] or "?"), key), r)
    by_file = {}
    bad = 0
    rows = []
    for (test, key), r in sorted(distinct.items()):
        bytes_ = captured.get(test, {}).get(key, "missing")
        same = bytes_ == r["shared_bytes"]
        bad += not same
        file = test.split("::")[0]
        counts = by_file.setdefault(file, [0, 0])
        counts[0] += 1
        counts[1] += same
        if not same:
            rows.append((test, r["kernel"], key, r["shared_bytes"], bytes_))
    print(
        f"Real run on {real['device']} (torch {real['torch']}, Triton {real['triton']}) "
        f"against `tilefit capture` as {device}\n"
    )
    print(
        "| file | distinct compiles (per test) of the real run | in the capture, equal bytes |"
    )
    print("|---|---|---|")
    for file, (total, same) in sorted(by_file.items()):
        print(f"| {file} | {total} | {same} |")
    for row in rows:
        print(
            f"\nDIFFERS: {row[0]} {row[1]} real {row[3]} captured {row[4]}\n  {row[2]}"
        )
    real_tests = real["tests"]
    print(f"\nreal run: {len(real_tests)} tests, outcomes {_outcomes(real_tests)}")
    return 1 if bad else 0


def _outcomes(tests):
    counts = {}
    for outcome in tests.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit(f"usage: {__doc__}")
