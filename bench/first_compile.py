"""Where a worker's first compile spends its time: the worker script's warm-up compile for three
archs in one process, each profiled, with the threads the process runs after each and whether
torch got imported (the native specializer imports it unless the worker stands it in).

usage: python bench/first_compile.py    (from the repository root; prints a report)
"""

import cProfile
import io
import os
import pstats
import sys
import time


def threads():
    return len(os.listdir("/proc/self/task"))


def main():
    started = time.perf_counter()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import worker_script

    worker = worker_script.load()
    worker._torch_stand_in()
    worker._install_early_stop()
    print(
        f"import triton and set up: {time.perf_counter() - started:.3f} s, {threads()} threads",
        flush=True,
    )
    for target in (
        {"backend": "cuda", "arch": "sm_90", "warp_size": 32},
        {"backend": "cuda", "arch": "sm_120", "warp_size": 32},
        {"backend": "hip", "arch": "gfx942", "warp_size": 64},
    ):
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.enable()
        worker.warm({"target": target})
        profile.disable()
        torch = sys.modules.get("torch")
        print(
            f"{target['arch']} warm-up compile: {time.perf_counter() - started:.3f} s, {threads()} threads, "
            f"torch imported: {torch is not None and not (torch.__doc__ or '').startswith('tilefit')}",
            flush=True,
        )
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(12)
        print(text.getvalue()[-2500:])


if __name__ == "__main__":
    main()
