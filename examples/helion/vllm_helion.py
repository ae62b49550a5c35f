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
first N entries. `load` runs, for each op with a file for this device's platform name, each of
the file's keys through the op's own config picker and the config the ConfigManager returns.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
import vllm_stub  # noqa: E402

from tilefit import emulate  # noqa: E402


def judge(wheel, platforms, limit):
    import helion

    root = wheel / "vllm/kernels/helion/configs"
    for op in sorted(p.name for p in root.iterdir() if p.is_dir()):
        vllm_stub.load_op(op)
        for platform in platforms:
            path = root / op / f"{platform}.json"
            if not path.exists():
                continue
            entries = json.loads(path.read_text())
            for entry in entries[:limit] if limit else entries:
                key = json.dumps(entry["key"], sort_keys=True)
                with emulate.call(f"{op} {platform} {key}"):
                    config = helion.Config(**entry["config"])
                    vllm_stub.kernel(op, config)(
                        *vllm_stub.inputs(op, entry["key"] or {})
                    )


def load(wheel, configs):
    manager_module = vllm_stub.config_manager()
    utils = sys.modules["vllm.kernels.helion.utils"]
    manager = manager_module.ConfigManager(base_dir=configs)
    platform = utils.get_canonical_gpu_name(0)
    ops = sorted(p.name for p in (wheel / "vllm/kernels/helion/ops").glob("*.py"))
    found = 0
    for op in (Path(o).stem for o in ops if o != "__init__.py"):
        picked = manager.get_platform_configs(op, platform)
        if not picked:
            print(f"{op}: no configs for {platform} (vLLM disables the op here)")
            continue
        vllm_stub.load_op(op)
        picker = vllm_stub.REGISTERED[op]["config_picker"]
        for key in picked:
            args = vllm_stub.inputs(op, dict(key))
            chosen = picker(args, list(picked))
            found += 1
            with emulate.call(
                f"{op} {platform} {json.dumps(dict(key), sort_keys=True)}"
            ):
                vllm_stub.kernel(op, picked[chosen if chosen is not None else key])(
                    *args
                )
    if not found:
        raise SystemExit(f"no Helion configs for {platform} in {configs}")


mode, wheel, *rest = sys.argv[1:]
wheel = Path(wheel)
vllm_stub.install(wheel)
print("device:", torch.cuda.get_device_name(0))
if mode == "judge":
    limit = 0
    if "--limit" in rest:
        at = rest.index("--limit")
        limit = int(rest[at + 1])
        del rest[at : at + 2]
    judge(wheel, rest, limit)
elif mode == "load":
    load(wheel, Path(rest[0]))
else:
    raise SystemExit(f"unknown mode {mode!r}: judge or load")
