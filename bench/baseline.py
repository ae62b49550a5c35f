"""The benchmark's reference points, in one Python process, one compile after another.

  python bench/baseline.py full  JOBS.json   what a user would otherwise write: a loop calling
                                             triton.compile with the signature, constants and
                                             divisibility written out by hand
  python bench/baseline.py floor JOBS.json   the same loop, each compile stopped right after
                                             shared-memory allocation (tilefit's early stop,
                                             imported from the worker script): the floor

JOBS.json comes from `tilefit probe SPEC --dump-jobs JOBS.json` (the very jobs tilefit compiles).
Prints one JSON line: mode, jobs, seconds, per_job, the sizes (bytes per job in the file's order, or
the exception's name where a compile failed) and their checksum, so the harness can compare them
with tilefit's bytes job by job.
"""

import hashlib
import importlib.util
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_worker():
    sys.path.insert(0, HERE)
    import worker_script

    return worker_script.load()  # defines the functions; serve() runs only as __main__


def hand_written(job, fn):
    """Signature, constants and attributes as a user writes them from the launch's arguments."""
    names = [p.name for p in fn.params]
    signature, constants, attrs = {}, {}, {}
    for index, name in enumerate(names):
        if name in job["constexprs"]:
            signature[name] = "constexpr"
            constants[(index,)] = job["constexprs"][name]
            continue
        arg = job["args"][name]
        kind = arg["type"]
        value = arg.get("value")
        if (
            not kind.startswith("*")
            and isinstance(value, int)
            and not isinstance(value, bool)
            and value == 1
        ):
            signature[name] = "constexpr"
            constants[(index,)] = 1
            continue
        signature[name] = kind
        divisible = (
            arg.get("aligned", True)
            if kind.startswith("*")
            else (
                isinstance(value, int)
                and not isinstance(value, bool)
                and value % 16 == 0
            )
        )
        if divisible:
            attrs[(index,)] = [["tt.divisibility", 16]]
    return signature, constants, attrs


def main():
    mode, jobs_file = sys.argv[1], sys.argv[2]
    jobs = json.load(open(jobs_file))
    started = time.perf_counter()
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    worker = None
    if mode == "floor":
        worker = load_worker()
        worker._torch_stand_in()
        worker._install_early_stop()
    else:
        load_worker()._torch_stand_in()  # the HIP backend needs it to specialize on a CPU machine
    functions = {}
    sizes = []
    for job in jobs:
        key = (job["kernel_file"], job["function"])
        if key not in functions:
            spec = importlib.util.spec_from_file_location(
                f"bench_kernel_{len(functions)}", job["kernel_file"]
            )
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            functions[key] = getattr(module, job["function"])
        fn = functions[key]
        signature, constants, attrs = hand_written(job, fn)
        target = job["target"]
        arch = (
            int(target["arch"][3:]) if target["backend"] == "cuda" else target["arch"]
        )
        gpu = GPUTarget(target["backend"], arch, target["warp_size"])
        source = ASTSource(fn, signature, constants, attrs)
        try:
            if worker is not None:
                kernel = worker.compile_capturing(
                    source, gpu, dict(job["options"]), full=False
                )
            else:
                kernel = triton.compile(
                    source, target=gpu, options=dict(job["options"])
                )
            sizes.append(int(kernel.metadata.shared))
        except Exception as error:
            sizes.append(type(error).__name__)
    seconds = time.perf_counter() - started
    checksum = hashlib.sha256(json.dumps(sizes).encode()).hexdigest()[:16]
    print(
        json.dumps(
            {
                "mode": mode,
                "jobs": len(jobs),
                "seconds": seconds,
                "per_job": seconds / max(len(jobs), 1),
                "sizes_sha": checksum,
                "sizes": sizes,
            }
        )
    )


if __name__ == "__main__":
    main()
