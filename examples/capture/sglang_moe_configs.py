"""The round trip of `tilefit probe --emit-files` through SGLang 0.5.23's own code: under the
emulated device, SGLang's `get_moe_configs` (`fused_moe_triton_config.py`, unmodified) names the
config file for this device and the Triton in use, finds it under `SGLANG_MOE_CONFIG_DIR`
(`configs/triton_X_Y_Z/`, falling back newest-first), and SGLang's launcher
(`invoke_fused_moe_kernel`, unmodified) launches `fused_moe_kernel` with each entry;
`tilefit capture` judges every launch.

    tilefit capture examples/capture/sglang_moe_configs.py --targets h100,mi300x \\
        -- SGLANG_SRC ENGINE_ROOT E,N,dtype [E,N,dtype ...]

SGLANG_SRC is the unzipped wheel (`pip download sglang==0.5.23 --no-deps`); ENGINE_ROOT a folder
whose `configs/` is what `--emit-files` wrote. SGLang is not installed: the platform queries are
stood in with SGLang's own definitions (read from torch, so they answer for the emulated device),
the fp8 activation quantization (a custom op) with a stand-in that only produces shapes, and
every other `sglang.*` import with inert stand-ins.
"""

import os
import sys
from types import SimpleNamespace

import torch
import triton.language as tl

from tilefit import emulate

src, root, *shapes = sys.argv[1:]
os.environ["SGLANG_MOE_CONFIG_DIR"] = root


def is_hip():
    return torch.version.hip is not None


def is_cuda():
    return torch.cuda.is_available() and torch.version.cuda is not None


def fp8_quant(a, a_scale=None, use_per_token_if_dynamic=False, **_):
    """`scaled_fp8_quant`'s shapes: the activation in fp8, one scale (per token when asked)."""
    fp8 = torch.float8_e4m3fnuz if is_hip() else torch.float8_e4m3fn
    scale = torch.empty(a.shape[0] if use_per_token_if_dynamic else 1, 1, dtype=torch.float32, device=a.device)
    return torch.empty(a.shape, dtype=fp8, device=a.device), scale


emulate.stand_in(
    "sglang.srt.utils",
    is_hip=is_hip,
    is_cuda=is_cuda,
    is_cpu=lambda: False,
    cpu_has_amx_support=lambda: False,
    get_device_name=lambda device_id=0: torch.cuda.get_device_name(device_id),
)
deterministic = SimpleNamespace(enable_deterministic_inference=False)
emulate.stand_in("sglang.srt.runtime_context", get_exec=lambda: SimpleNamespace(deterministic=deterministic))
# SGLang's own value without SGLANG_MOE_PADDING.
emulate.stand_in("sglang.srt.layers.moe.utils", get_moe_padding_size=lambda is_aiter_moe: 0)
emulate.stand_in("sglang.kernels.ops.quantization.fp8_kernel", scaled_fp8_quant=fp8_quant)
emulate.stand_in_package("sglang")
config = emulate.load_source(
    os.path.join(src, "sglang/srt/layers/moe/moe_runner/triton_utils/fused_moe_triton_config.py"),
    "sglang.srt.layers.moe.moe_runner.triton_utils.fused_moe_triton_config",
)
kernels = emulate.load_source(
    os.path.join(src, "sglang/kernels/ops/moe/fused_moe_triton_kernels.py"), "sglang.kernels.ops.moe.fused_moe_triton_kernels"
)

HIDDEN, TOP_K = 4096, 2
for shape in shapes:
    e, n, dtype = shape.split(",")
    experts, inter = int(e), int(n)
    name = config.get_config_file_name(experts, inter, dtype)
    configs = config.get_moe_configs(experts, inter, dtype)
    if not configs:
        raise SystemExit(f"SGLang found no config file {name} under {root}/configs")
    print(f"{name}: SGLang loaded {len(configs)} entries")
    int8 = dtype == "int8_w8a16"
    fp8 = dtype == "fp8_w8a8"
    weight = torch.int8 if int8 else (torch.float8_e4m3fnuz if is_hip() else torch.float8_e4m3fn) if fp8 else torch.bfloat16
    w1 = torch.empty(experts, 2 * inter, HIDDEN, dtype=weight, device="cuda")
    for batch in sorted(configs):
        with emulate.call(f"{name} M={batch}"):
            entry = dict(configs[batch])
            entry.pop("USE_TMA", None)  # SGLang's launcher pops it before the launch
            a = torch.empty(batch, HIDDEN, dtype=torch.bfloat16, device="cuda")
            c = torch.empty(batch, TOP_K, 2 * inter, dtype=torch.bfloat16, device="cuda")
            padded = batch * TOP_K + experts * (entry["BLOCK_SIZE_M"] - 1)
            kernels.invoke_fused_moe_kernel(
                a, w1, None, c, None,
                torch.empty(experts, 2 * inter, dtype=torch.float32, device="cuda") if (int8 or fp8) else None,
                None,
                torch.empty(batch, TOP_K, dtype=torch.float32, device="cuda"),
                torch.empty(batch, TOP_K, dtype=torch.int32, device="cuda"),
                torch.empty(padded, dtype=torch.int32, device="cuda"),
                torch.empty(padded // entry["BLOCK_SIZE_M"] + 1, dtype=torch.int32, device="cuda"),
                torch.empty(1, dtype=torch.int32, device="cuda"),
                False, TOP_K, entry, tl.bfloat16, fp8, False, int8, False, False,
            )
