"""The truth for `tilefit capture` on a real GPU: run a capture script for real (no emulation),
record every compile through Triton's own hook (`knobs.runtime.jit_post_compile_hook`: the
signature, constants, divisibility attributes and options the JIT compiled with, and the compiled
kernel's `metadata.shared`) and count launches through `launch_enter_hook`; then compare with what
`tilefit capture --json` reported for the same device, launch by launch.

    python3 scripts/capture_truth.py record REAL.json SCRIPT.py [ARGS...]
    python3 scripts/capture_truth.py compare REAL.json CAPTURE.json DEVICE   # Markdown table

The comparison exits 1 when a compile of the capture differs from the real one (kernel,
constexprs, options, 16-divisible arguments or bytes), or when a real compile has no captured
counterpart that is not explained by a stopped call.
"""

import json
import os
import runpy
import sys


def compiled(key, fn, compile):
    """What `jit_post_compile_hook` tells of one compile: the kernel, its constexprs, options and
    16-divisible arguments, and the compiled kernel's `metadata.shared`."""
    jit = fn.jit_function
    cache = jit.device_caches[compile["device"]][0]
    kernel = cache.get(key)
    if hasattr(kernel, "result"):
        kernel = kernel.result()
    params = list(jit.params)
    constexprs = {}
    for path, value in compile["constants"].items():
        param = params[path[0]]
        if param.is_constexpr:
            constexprs[param.name] = value if isinstance(value, (bool, int, float, str, type(None))) else repr_(value)
    divisible = sorted(params[path[0]].name for path, attrs in compile["configs"][0].items()
                       if ["tt.divisibility", 16] in [list(a) for a in attrs])
    return {
        "kernel": jit.fn.__name__,
        "file": os.path.abspath(jit.fn.__code__.co_filename),
        "constexprs": constexprs,
        "options": {"num_warps": compile["num_warps"], "num_stages": compile["num_stages"]},
        "divisible_by_16": divisible,
        "shared_bytes": kernel.metadata.shared,
    }


def repr_(value):
    return f"tl.{value}" if "dtype" in type(value).__name__ else repr(value)


def record(out, script, args):
    import triton
    from triton import knobs

    compiles = []
    launches = {}

    def post_compile(key, repr, fn, compile, is_manual_warmup, already_compiled):
        compiles.append(compiled(key, fn, compile))
        return None

    def launch_enter(metadata):
        name = metadata.get()["name"] if hasattr(metadata, "get") else str(metadata)
        launches[name] = launches.get(name, 0) + 1

    knobs.runtime.jit_post_compile_hook = post_compile
    knobs.runtime.launch_enter_hook = launch_enter
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    import torch

    with open(out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "triton": triton.__version__,
                   "compiles": compiles, "launches": launches}, f, indent=1)


def _plain(value):
    """Constexprs as one comparable text: a `tl` dtype by Triton's own short name (the hook
    prints `tl.bf16`, the capture `tl.bfloat16`: the same dtype)."""
    return json.dumps({k: _dtype_name(v) for k, v in value.items()}, sort_keys=True)


def _dtype_name(value):
    if not (isinstance(value, str) and value.startswith("tl.")):
        return value
    import triton.language as tl

    named = getattr(tl, value[3:], None)
    if isinstance(named, tl.dtype):
        return f"tl.{named}"
    try:
        return f"tl.{tl.dtype(value[3:])}"
    except (ValueError, AssertionError, TypeError):
        return value


def compare(real_file, capture_file, device):
    real = json.load(open(real_file))
    capture = json.load(open(capture_file))
    target = next(t for t in capture["targets"] if t["device"]["device"] == device)
    rows, bad = [], 0
    matched = set()
    for c in target["compiles"]:
        result = c.get("result") or {}
        options = {k: c["options"][k] for k in ("num_warps", "num_stages") if k in c["options"]}
        constexprs = {k: v for k, v in c["constexprs"].items()}
        found = None
        for i, r in enumerate(real["compiles"]):
            if i in matched or r["kernel"] != c["kernel"]["function"]:
                continue
            if _plain(r["constexprs"]) == _plain(constexprs) and all(r["options"][k] == v for k, v in options.items()):
                found = i
                break
        if found is None:
            bad += 1
            rows.append((c["kernel"]["function"], _short(constexprs, options), "no real compile", "", result.get("shared_bytes"), "DIFFERS"))
            continue
        matched.add(found)
        r = real["compiles"][found]
        same_div = sorted(result.get("divisible_by_16", [])) == r["divisible_by_16"]
        same = same_div and result.get("shared_bytes") == r["shared_bytes"]
        bad += not same
        rows.append((c["kernel"]["function"], _short(constexprs, options), ", ".join(r["divisible_by_16"]) if same_div else
                     f"real {r['divisible_by_16']} vs {result.get('divisible_by_16')}",
                     r["shared_bytes"], result.get("shared_bytes"), "same" if same else "DIFFERS"))
    stopped = len(target["stopped"])
    for i, r in enumerate(real["compiles"]):
        if i not in matched:
            verdict = "not captured (a stopped call)" if stopped else "NOT CAPTURED"
            bad += not stopped
            rows.append((r["kernel"], _short(r["constexprs"], r["options"]), ", ".join(r["divisible_by_16"]), r["shared_bytes"], "", verdict))
    print(f"Real run on {real['device']} (Triton {real['triton']}) against `tilefit capture` as {device}\n")
    print("| kernel | constexprs and options | divisible by 16 | real bytes | captured bytes | |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")
    print(f"\nreal launches by kernel: {real['launches']}")
    return 1 if bad else 0


def _short(constexprs, options):
    parts = [f"{k}={v}" for k, v in sorted(constexprs.items())] + [f"{k}={v}" for k, v in sorted(options.items())]
    return " ".join(parts)


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4]))
    else:
        sys.exit(f"usage: {__doc__}")
