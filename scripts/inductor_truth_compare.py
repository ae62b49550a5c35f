"""Compare a real run's Inductor compiles (`scripts/inductor_truth.py`) with a capture's JSON
report of the same script for one target: every kernel Inductor compiled on the device, its
config (num_warps, num_stages) and its bytes, against the kernels the capture recorded for the
emulated device, the configs Inductor chose there and the bytes tilefit compiled; and the kernels
whose compile failed on the device (`No valid triton configs`) against the ones the capture
judges crashing.

Under max-autotune, each selection's Triton template choices are compared apart: every choice
the device compiled (Inductor's description of its config, and its bytes) against the choices the
capture judged, and the choices the device rejected (a failed precompile, or an infinite
benchmark: OutOfResources) against the ones the capture judges over. The kernels that follow a
selection (the chosen template with its epilogue, or ATen's kernel and a separate epilogue) depend
on which choice was fastest on the device, which the capture does not measure: where they differ
they are listed, not counted against the agreement.

    python scripts/inductor_truth_compare.py TRUTH.json CAPTURE.json TARGET

Exits 1 when they differ, printing each difference.
"""

import json
import sys
from collections import Counter


def truth_rows(truth):
    plain, choices = Counter(), Counter()
    for c in truth["compiles"]:
        if c.get("choice"):
            choices[(c["kernel"], c["choice"], c["shared"])] += 1
        else:
            plain[(c["kernel"], c["num_warps"], c["num_stages"], c["shared"])] += 1
    rejected = {(r["name"].rsplit("_", 1)[0], r["choice"]) for r in truth["rejected"]}
    rejected |= {
        (t["name"].rsplit("_", 1)[0], t["choice"])
        for t in truth.get("timings", [])
        if t["ms"] is None
    }
    return plain, choices, rejected


def capture_rows(report, target):
    found = [t for t in report["targets"] if t["device"]["device"] == target]
    if not found:
        sys.exit(f"the capture has no target {target}")
    target = found[0]
    plain, choices = Counter(), Counter()
    crashing, over = set(), set()
    for launch in target["launches"]:
        inductor = launch.get("inductor")
        if inductor is None:
            continue
        selection = inductor.get("choices")
        if launch["verdict"] in ("over", "none-fits"):
            crashing.add(launch["kernel"]["function"])
        for i in launch["compiles"]:
            compile_ = target["compiles"][i]
            options = compile_["options"]
            result = compile_.get("result") or {}
            bytes_ = result.get("shared_bytes")
            if selection is not None:
                choices[
                    (
                        compile_["kernel"]["function"],
                        compile_["inductor_choice"],
                        bytes_,
                    )
                ] += 1
                if any(v.get("over_by") for v in result.get("verdicts", [])):
                    over.add((selection["op"], compile_["inductor_choice"]))
                continue
            plain[
                (
                    compile_["kernel"]["function"],
                    options.get("num_warps"),
                    options.get("num_stages"),
                    bytes_,
                )
            ] += launch.get("count", 1)
    return plain, choices, crashing, over


def main(truth_path, capture_path, target):
    with open(truth_path, encoding="utf-8") as f:
        truth = json.load(f)
    with open(capture_path, encoding="utf-8") as f:
        report = json.load(f)
    real, real_choices, rejected = truth_rows(truth)
    captured, captured_choices, crashing, over = capture_rows(report, target)
    autotuned = bool(real_choices or captured_choices)
    # A kernel launched several times is compiled once: compare the sets of compiles.
    real_set, captured_set = set(real), set(captured)
    failed = {f["kernel"] for f in truth["failures"] if not f.get("choice")}
    plain_ok = real_set == captured_set and failed == crashing
    choices_ok = set(real_choices) == set(captured_choices) and rejected == over
    ok = choices_ok and (plain_ok or autotuned)
    follows = " (follows a selection's pick)" if autotuned else ""
    for row in sorted(real_set - captured_set, key=str):
        print(f"only on {truth['device']}{follows}: {row}")
    for row in sorted(captured_set - real_set, key=str):
        print(f"only in the capture for {target}{follows}: {row}")
    if failed != crashing:
        print(
            f"failed on the device: {sorted(failed)}; judged crashing: {sorted(crashing)}"
        )
    for row in sorted(set(real_choices) - set(captured_choices), key=str):
        print(f"choice only on {truth['device']}: {row}")
    for row in sorted(set(captured_choices) - set(real_choices), key=str):
        print(f"choice only in the capture for {target}: {row}")
    for row in sorted(rejected - over, key=str):
        print(f"rejected on {truth['device']}, not judged over: {row}")
    for row in sorted(over - rejected, key=str):
        print(f"judged over, not rejected on {truth['device']}: {row}")
    print(
        f"{truth_path}: {len(real_set)} compiles on {truth['device']}, "
        f"{len(captured_set)} in the capture for {target}, "
        f"{len(real_set & captured_set)} equal (kernel, num_warps, num_stages, bytes); "
        f"{len(failed)} failed there, {len(crashing)} judged crashing; "
        f"max-autotune choices: {len(set(real_choices))} distinct on the device, "
        f"{len(set(captured_choices))} in the capture, "
        f"{len(set(real_choices) & set(captured_choices))} equal (kernel, config, bytes); "
        f"{len(rejected)} rejected there, {len(over)} judged over: "
        + ("AGREE" if ok else "DIFFER")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
