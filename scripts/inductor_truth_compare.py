"""Compare a real run's Inductor compiles (`scripts/inductor_truth.py`) with a capture's JSON
report of the same script for one target: every kernel Inductor compiled on the device, its
config (num_warps, num_stages) and its bytes, against the kernels the capture recorded for the
emulated device, the configs Inductor chose there and the bytes tilefit compiled; and the kernels
whose compile failed on the device (`No valid triton configs`) against the ones the capture
judges crashing.

    python scripts/inductor_truth_compare.py TRUTH.json CAPTURE.json TARGET

Exits 1 when they differ, printing each difference.
"""

import json
import sys
from collections import Counter


def truth_rows(truth):
    return Counter(
        (c["kernel"], c["num_warps"], c["num_stages"], c["shared"])
        for c in truth["compiles"]
    )


def capture_rows(report, target):
    found = [t for t in report["targets"] if t["device"]["device"] == target]
    if not found:
        sys.exit(f"the capture has no target {target}")
    target = found[0]
    rows = Counter()
    crashing = set()
    for launch in target["launches"]:
        if launch.get("inductor") is None:
            continue
        if launch["verdict"] in ("over", "none-fits"):
            crashing.add(launch["kernel"]["function"])
        for i in launch["compiles"]:
            compile_ = target["compiles"][i]
            options = compile_["options"]
            rows[
                (
                    compile_["kernel"]["function"],
                    options.get("num_warps"),
                    options.get("num_stages"),
                    (compile_.get("result") or {}).get("shared_bytes"),
                )
            ] += launch.get("count", 1)
    return rows, crashing


def main(truth_path, capture_path, target):
    with open(truth_path, encoding="utf-8") as f:
        truth = json.load(f)
    with open(capture_path, encoding="utf-8") as f:
        report = json.load(f)
    real = truth_rows(truth)
    captured, crashing = capture_rows(report, target)
    # A kernel launched several times is compiled once: compare the sets of compiles.
    real_set, captured_set = set(real), set(captured)
    failed = {f["kernel"] for f in truth["failures"]}
    ok = real_set == captured_set and failed == crashing
    for row in sorted(real_set - captured_set, key=str):
        print(f"only on {truth['device']}: {row}")
    for row in sorted(captured_set - real_set, key=str):
        print(f"only in the capture for {target}: {row}")
    if failed != crashing:
        print(
            f"failed on the device: {sorted(failed)}; judged crashing: {sorted(crashing)}"
        )
    print(
        f"{truth_path}: {len(real_set)} compiles on {truth['device']}, "
        f"{len(captured_set)} in the capture for {target}, "
        f"{len(real_set & captured_set)} equal (kernel, num_warps, num_stages, bytes); "
        f"{len(failed)} failed there, {len(crashing)} judged crashing: "
        + ("AGREE" if ok else "DIFFER")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
