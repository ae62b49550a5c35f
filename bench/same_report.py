"""Whether two capture reports judge the same run: `python3 bench/same_report.py A.json B.json`.

Equal means: every target's launches (kernel, launching line, tests, count, compiles, verdict,
fix), compiles (values and bytes), tests (outcome, launches, checks), checks, assumptions, stops
and failures are the same. Left out as what differs between two runs of one suite by nature:
times, whether a compile came from the cache, tracebacks (they name the run's scratch folder), the processes' exits and output, the tool and its
workers, a shard's records; and the names of child processes, which multiprocessing numbers per
parent process (a test's `SpawnProcess-3` in one run is `SpawnProcess-1` in a shard), so a
child's records are compared by what they hold. How many workers of a pool that ends at its
first failure (`torch.multiprocessing.spawn`) started and failed before it ended is a race in
every run: children, and errors, stops, checks and assumptions, are compared as the distinct
entries they are, not counted. Prints the
first difference and exits 1 when they differ.
"""

import json
import sys

VOLATILE = {
    "seconds",
    "compile_seconds",
    "cached",
    "binary",
    "script",
    "tool",
    "workers",
    "shard",
    "records",
    "process",
    "places",
    "traceback",
}


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def judged(report):
    targets = []
    for target in report["targets"]:
        target = dict(target)
        # The calls counted include each child's own: as many as workers started (above).
        target.pop("calls", None)
        target["children"] = sorted(
            {
                (c.get("exit"), c.get("launches"), c.get("failure") is None)
                for c in target.get("children", [])
            }
        )
        for key in ("errors", "stopped", "checks", "assumptions", "failures"):
            # Records of children, numbered per parent, and how many workers of a pool that
            # ends at its first failure got to fail before it ended: the distinct entries.
            target[key] = sorted(
                {json.dumps(strip(e), sort_keys=True) for e in target.get(key, [])}
            )
        targets.append(strip(target))
    return {"script": report["script"], "targets": targets}


def first_difference(a, b, where="report"):
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{where}.{key}: only in {'the second' if key in b else 'the first'}"
            found = first_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        a = json.load(f)
    with open(sys.argv[2], encoding="utf-8") as f:
        b = json.load(f)
    found = first_difference(judged(a), judged(b))
    launches = sum(launch["count"] for t in a["targets"] for launch in t["launches"])
    tests = sum(len(t.get("tests", [])) for t in a["targets"])
    if found:
        print(f"the reports differ: {found}")
        sys.exit(1)
    print(f"the same: {tests} tests x devices, {launches} launches, launch for launch")


if __name__ == "__main__":
    main()
