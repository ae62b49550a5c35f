"""Compare a real run's Inductor compiles (`scripts/inductor_truth.py`) with a capture's JSON
report of the same script for one target: every kernel Inductor compiled on the device, its
config (num_warps, num_stages) and its bytes, against the kernels the capture recorded for the
emulated device, the configs Inductor chose there and the bytes tilefit compiled; and the kernels
whose compile failed on the device (`No valid triton configs`) against the ones the capture
judges crashing.

Under max-autotune, the selections are compared one by one, in the order they ran: each
selection's Triton template choices as the device compiled them (Inductor's description of the
config, and its bytes) against the choices the capture judged, and the choices the device
rejected (a failed precompile, or an infinite benchmark: OutOfResources) against the ones the
capture judges over.

The kernels after a selection (the chosen template with its epilogue fused, or ATen's kernel and
a separate epilogue) depend on which choice the selection keeps. A truth run made with
``TILEFIT_TRUTH_PICK=first-fitting`` keeps the choice the capture keeps, and then every kernel is
compared. A run that kept the fastest choice lists those kernels where they differ and does not
count them against the agreement. Compiles made by the coordinate descent tuner follow the
device's timings alone: they are counted and checked against the budget (the tuner skips a config
that does not load), never compared.

    python scripts/inductor_truth_compare.py TRUTH.json CAPTURE.json TARGET

Exits 1 when they differ, printing each difference.
"""

import json
import sys
from collections import Counter


def stem(name):
    """A choice's template (``triton_mm`` of ``triton_mm_19``)."""
    head, _, tail = name.rpartition("_")
    return head if tail.isdigit() and head else name


def blocks(constants):
    """A compile's block sizes (``XBLOCK``, ``R0_BLOCK``...) where its constants are named, as
    one hashable part of its row; () for a truth that keyed them by position."""
    return tuple(
        sorted(
            (k, v) for k, v in constants.items() if k.endswith("BLOCK") and k.isupper()
        )
    )


def truth_rows(truth):
    plain, coordesc, choices = Counter(), [], []
    named = any(
        k.endswith("BLOCK") for c in truth["compiles"] for k in c.get("constants", {})
    )
    truth["_named"] = named
    for c in truth["compiles"]:
        row = (c["kernel"], c["num_warps"], c["num_stages"], c["shared"])
        if named:
            row += (blocks(c.get("constants", {})),)
        if c.get("coordesc"):
            coordesc.append(row)
        elif c.get("choice"):
            choices.append((c["kernel"], c["choice"], c["shared"]))
        else:
            plain[row] += 1
    rejected = [(stem(r["name"]), r["choice"]) for r in truth["rejected"]]
    rejected += [
        (stem(t["name"]), t["choice"])
        for t in truth.get("timings", [])
        if t["ms"] is None
    ]
    return plain, coordesc, choices, rejected


def capture_rows(report, target, named=False):
    found = [t for t in report["targets"] if t["device"]["device"] == target]
    if not found:
        sys.exit(f"the capture has no target {target}")
    target = found[0]
    if target.get("failures") or target.get("errors") or target.get("failure"):
        sys.exit(
            f"the capture for {target['device']['device']} failed: "
            f"{target.get('failures') or target.get('errors') or target.get('failure')}"
        )
    plain = Counter()
    crashing = set()
    selections = []
    for launch in target["launches"]:
        inductor = launch.get("inductor")
        if inductor is None:
            continue
        selection = inductor.get("choices")
        if launch["verdict"] in ("over", "none-fits"):
            crashing.add(launch["kernel"]["function"])
        if selection is not None:
            selections.append({"op": selection["op"], "choices": [], "over": set()})
        for i in launch["compiles"]:
            compile_ = target["compiles"][i]
            options = compile_["options"]
            result = compile_.get("result") or {}
            bytes_ = result.get("shared_bytes")
            if selection is not None:
                choice = compile_["inductor_choice"]
                selections[-1]["choices"].append(
                    (compile_["kernel"]["function"], choice, bytes_)
                )
                if any(v.get("over_by") for v in result.get("verdicts", [])):
                    selections[-1]["over"].add((selection["op"], choice))
                continue
            row = (
                compile_["kernel"]["function"],
                options.get("num_warps"),
                options.get("num_stages"),
                bytes_,
            )
            if named:
                row += (blocks(compile_.get("constexprs", {})),)
            plain[row] += launch.get("count", 1)
    return plain, crashing, selections, target["device"]["smem_per_block_optin"]


def split(choices, rejected, selections):
    """The device's choice compiles cut into the capture's selections (they ran one after
    another, each precompiling all its choices before the next began), and each rejected choice
    given to the first selection, from the last one given, that compiled it and has not yet
    rejected it (a selection rejects a choice once)."""
    chunks, at = [], 0
    for selection in selections:
        size = len(selection["choices"])
        chunks.append({"choices": choices[at : at + size], "rejected": set()})
        at += size
    unplaced = []
    first = 0
    for kernel, choice in rejected:
        for j in range(first, len(chunks)):
            if (kernel, choice) not in chunks[j]["rejected"] and any(
                k == kernel and c == choice for k, c, _ in chunks[j]["choices"]
            ):
                chunks[j]["rejected"].add((kernel, choice))
                first = j
                break
        else:
            unplaced.append((kernel, choice))
    return chunks, at, unplaced


def differences(theirs, mine, rejected, over, device, target):
    """Print what one side of a comparison of choices has and the other lacks; whether they
    agree. ``theirs``/``mine``: the device's and the capture's choices (Counters);
    ``rejected``/``over``: the device's rejected choices and the capture's judged over."""
    for row in sorted(theirs - mine, key=str):
        print(f"  choice only on {device}: {row}")
    for row in sorted(mine - theirs, key=str):
        print(f"  choice only in the capture for {target}: {row}")
    for row in sorted(rejected - over, key=str):
        print(f"  rejected on {device}, not judged over: {row}")
    for row in sorted(over - rejected, key=str):
        print(f"  judged over, not rejected on {device}: {row}")
    return mine == theirs and rejected == over


def main(truth_path, capture_path, target):
    with open(truth_path, encoding="utf-8") as f:
        truth = json.load(f)
    with open(capture_path, encoding="utf-8") as f:
        report = json.load(f)
    device = truth["device"]
    real, coordesc, real_choices, rejected = truth_rows(truth)
    captured, crashing, selections, budget = capture_rows(
        report, target, truth["_named"]
    )
    autotuned = bool(real_choices or selections)
    forced = truth.get("pick") == "first-fitting"
    ok = True

    if truth.get("epilogue_benchmark", False) and selections:
        # The device deferred its precompiles to the epilogue benchmark, where selections
        # interleave: the choices and the rejected are compared over all selections together.
        mine = Counter(c for s in selections for c in s["choices"])
        theirs = Counter(real_choices)
        over = Counter(o for s in selections for o in s["over"])
        same = mine == theirs and Counter(rejected) == over
        ok = ok and same
        print(
            f"{len(selections)} selections (precompiled interleaved on {device}: compared "
            f"together): {sum(theirs.values())} choices compiled there, "
            f"{sum(mine.values())} judged in the capture, {sum((mine & theirs).values())} "
            f"equal; rejected there {len(rejected)}, judged over {sum(over.values())}: "
            + ("AGREE" if same else "DIFFER")
        )
        differences(theirs, mine, Counter(rejected), over, device, target)
        selections_, equal_choices = [], sum((mine & theirs).values())
    else:
        selections_, equal_choices = selections, 0
    # The selections, one by one.
    chunks, used, unplaced = split(real_choices, rejected, selections_)
    if not truth.get("epilogue_benchmark", False) and (
        used != len(real_choices) or unplaced
    ):
        ok = False
        print(
            f"the device compiled {len(real_choices)} max-autotune choices, the capture's "
            f"{len(selections)} selections hold {used}; rejected choices not placed: {unplaced}"
        )
    for n, (selection, chunk) in enumerate(zip(selections_, chunks), 1):
        mine, theirs = Counter(selection["choices"]), Counter(chunk["choices"])
        over = {(k, c) for k, c in selection["over"]}
        same = mine == theirs and chunk["rejected"] == over
        ok = ok and same
        equal_choices += sum((mine & theirs).values())
        print(
            f"selection {n} ({selection['op']}): {sum(theirs.values())} choices compiled on "
            f"{device}, {sum(mine.values())} judged in the capture, "
            f"{sum((mine & theirs).values())} equal (kernel, config, bytes); "
            f"rejected there {len(chunk['rejected'])}, judged over {len(over)}: "
            + ("AGREE" if same else "DIFFER")
        )
        differences(theirs, mine, chunk["rejected"], over, device, target)

    # Every other kernel. A kernel launched several times is compiled once: compare the sets.
    real_set, captured_set = set(real), set(captured)
    if not (real_set or real_choices) or not (captured_set or selections):
        ok = False
        print(
            f"nothing to compare: {len(real_set) + len(real_choices)} compiles on {device}, "
            f"{len(captured_set)} kernels and {len(selections)} selections in the capture"
        )
    failed = {f["kernel"] for f in truth["failures"] if not f.get("choice")}
    plain_ok = real_set == captured_set and failed == crashing
    strict = forced or not autotuned
    ok = ok and (plain_ok or not strict)
    follows = "" if strict else " (follows a selection's fastest pick)"
    for row in sorted(real_set - captured_set, key=str):
        print(f"only on {device}{follows}: {row}")
    for row in sorted(captured_set - real_set, key=str):
        print(f"only in the capture for {target}{follows}: {row}")
    if failed != crashing:
        print(
            f"failed on the device: {sorted(failed)}; judged crashing: {sorted(crashing)}"
        )

    # The coordinate descent tuner's compiles: its steps follow the device's timings.
    over_budget = [row for row in coordesc if row[3] is not None and row[3] > budget]
    if coordesc:
        print(
            f"{len(coordesc)} compiles by the coordinate descent tuner on {device} "
            f"({len(set(r[0] for r in coordesc))} kernels; its steps follow the device's "
            f"timings: not compared), the largest {max(r[3] or 0 for r in coordesc):,} bytes, "
            f"{len(over_budget)} over {budget:,} (the tuner skips those)"
        )
    print(
        f"{truth_path} (pick: {truth.get('pick', 'fastest')}): "
        f"{len(real_set)} compiles on {device}, {len(captured_set)} in the capture for "
        f"{target}, {len(real_set & captured_set)} equal (kernel, num_warps, num_stages, bytes"
        + (", block sizes" if truth["_named"] else "")
        + "); "
        f"{len(failed)} failed there, {len(crashing)} judged crashing; "
        f"max-autotune: {len(selections)} selections, {len(real_choices)} choices compiled "
        f"on the device, {equal_choices} equal; {len(rejected)} rejected there, "
        f"{sum(len(s['over']) for s in selections)} judged over: "
        + ("AGREE" if ok else "DIFFER")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
