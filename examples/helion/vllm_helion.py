"""vLLM's Helion kernels as vLLM ships them, under `tilefit capture`: Helion generates each
kernel's Triton for the device it asks `torch.cuda` about, which under capture is the emulated
target, so every launch is the code that device would get.

    # 1. Judge every entry of the shipped platform files on the parts that have none:
    tilefit capture examples/helion/vllm_helion.py --targets rtx-pro-6000,gb10,rtx-5090 \\
        --json judged.json -- judge WHEEL nvidia_h100 nvidia_b200
    # 2. Write those parts' files from the report (vLLM's naming and format):
    python examples/helion/helion_files.py judged.json WHEEL CONFIGS
    # 3. Judge them again as vLLM loads them (its ConfigManager, platform name and picker):
    tilefit capture examples/helion/vllm_helion.py --targets rtx-pro-6000,gb10,rtx-5090 \\
        -- load WHEEL CONFIGS

WHEEL is the unzipped wheel (`pip download --no-deps vllm==0.33.0`); Helion must be importable
(vLLM 0.33.0 pins helion 1.4.0). `judge` runs each entry at its key's shape with its config, in
a call named `OP PLATFORM KEY` (the report's launches carry it); `--limit N` takes each file's
first N entries, `--shard K/N` every Nth of them from the Kth (several captures side by side),
`--deadline SECONDS` starts no entry after that long (the last line says how many it
judged), and `--from I` starts at the shard's Ith entry (to go on where a deadline stopped). `load` runs, for each op with a file for this device's platform name, each of
the file's keys through the op's own config picker and the config the ConfigManager returns.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
import vllm_stub  # noqa: E402

from tilefit import emulate  # noqa: E402


def judge(wheel, platforms, limit, shard, deadline, start):
    import helion

    root = wheel / "vllm/kernels/helion/configs"
    todo = []
    for op in sorted(p.name for p in root.iterdir() if p.is_dir()):
        for platform in platforms:
            path = root / op / f"{platform}.json"
            if path.exists():
                entries = json.loads(path.read_text())
                entries = entries[:limit] if limit else entries
                todo += [(at, op, platform, e) for at, e in enumerate(entries)]
    # Every file's first entries first: a shard or a deadline covers every op evenly.
    todo = [entry[1:] for entry in sorted(todo, key=lambda entry: entry[:3])]
    index, count = shard
    mine = todo[index::count]
    done = start
    for op, platform, entry in mine[start:]:
        if deadline is not None and time.monotonic() > deadline:
            break
        vllm_stub.load_op(op)
        key = json.dumps(entry["key"], sort_keys=True)
        with emulate.call(f"{op} {platform} {key}"):
            config = helion.Config(**entry["config"])
            vllm_stub.kernel(op, config)(*vllm_stub.inputs(op, entry["key"] or {}))
        done += 1
    print(
        f"judged entries {start} to {done} of {len(mine)} (shard {index + 1} of {count} of "
        f"{len(todo)}); {len(mine) - done} not reached by the deadline"
    )


def load(wheel, configs, shard, deadline):
    manager_module = vllm_stub.config_manager()
    utils = sys.modules["vllm.kernels.helion.utils"]
    manager = manager_module.ConfigManager(base_dir=configs)
    platform = utils.get_canonical_gpu_name(0)
    ops = sorted(p.name for p in (wheel / "vllm/kernels/helion/ops").glob("*.py"))
    todo = []
    for op in (Path(o).stem for o in ops if o != "__init__.py"):
        picked = manager.get_platform_configs(op, platform)
        if not picked:
            print(f"{op}: no configs for {platform} (vLLM disables the op here)")
            continue
        todo += [(op, picked, key) for key in picked]
    if not todo:
        raise SystemExit(f"no Helion configs for {platform} in {configs}")
    index, count = shard
    mine = todo[index::count]
    done = 0
    for op, picked, key in mine:
        if deadline is not None and time.monotonic() > deadline:
            break
        vllm_stub.load_op(op)
        picker = vllm_stub.REGISTERED[op]["config_picker"]
        args = vllm_stub.inputs(op, dict(key))
        chosen = picker(args, list(picked))
        with emulate.call(f"{op} {platform} {json.dumps(dict(key), sort_keys=True)}"):
            config = picked[chosen if chosen is not None else key]
            vllm_stub.kernel(op, config)(*args)
        done += 1
    print(
        f"loaded {done} of {len(mine)} keys (shard {index + 1} of {count} of "
        f"{len(todo)}); {len(mine) - done} not reached by the deadline"
    )


def option(rest, name, default, parse):
    """`--name VALUE` taken out of `rest`, parsed; `default` when absent."""
    if name not in rest:
        return default
    at = rest.index(name)
    value = parse(rest[at + 1])
    del rest[at : at + 2]
    return value


def shard_of(text):
    index, count = (int(n) for n in text.split("/"))
    if not 1 <= index <= count:
        raise SystemExit(f"--shard {text}: K/N with 1 <= K <= N")
    return index - 1, count


mode, wheel, *rest = sys.argv[1:]
wheel = Path(wheel)
started = time.monotonic()
vllm_stub.install(wheel)
print("device:", torch.cuda.get_device_name(0))
shard = option(rest, "--shard", (0, 1), shard_of)
seconds = option(rest, "--deadline", None, float)
deadline = None if seconds is None else started + seconds
if mode == "judge":
    limit = option(rest, "--limit", 0, int)
    start = option(rest, "--from", 0, int)
    judge(wheel, rest, limit, shard, deadline, start)
elif mode == "load":
    load(wheel, Path(rest[0]), shard, deadline)
else:
    raise SystemExit(f"unknown mode {mode!r}: judge or load")
