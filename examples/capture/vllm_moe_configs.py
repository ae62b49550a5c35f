"""The round trip of `tilefit probe --emit-files` through vLLM 0.27.1's own code: under the
emulated device, vLLM's `try_get_optimal_moe_config` names the config file for this device
(`get_config_file_name`, from `current_platform.get_device_name()`), loads it from
`VLLM_TUNED_CONFIG_FOLDER` (`get_moe_configs`), picks the entry for each batch size, and vLLM's
own launcher (`invoke_fused_moe_triton_kernel`, with its edits: SPLIT_K = 1, BLOCK_SIZE_K
clamped) launches `fused_moe_kernel` with it; `tilefit capture` judges every launch.

    tilefit capture examples/capture/vllm_moe_configs.py --targets rtx-pro-6000,gb10,rtx-5090 \\
        -- VLLM_SRC CONFIG_DIR E,N[,dtype] [E,N[,dtype] ...]

VLLM_SRC is the unzipped wheel (`pip download vllm==0.27.1 --no-deps`); CONFIG_DIR the folder
`--emit-files` wrote. vLLM is not installed: `vllm.platforms`, `vllm.triton_utils` and `vllm.envs`
are stood in with what the code reads (vLLM's defaults), the launcher's helpers are vLLM's own
`fused_moe/utils.py`, and every other `vllm.*` import gets inert stand-ins. A
shape whose file the loader does not find stops with that message: the file name is not the one
vLLM computes.
"""

import os
import re
import sys

import torch
import triton
import triton.language as tl

from tilefit import emulate

src, config_dir, *shapes = sys.argv[1:]
platform = emulate.Platform()
platform.simple_compile_backend = "inductor"  # what vLLM's CUDA and ROCm platforms say
emulate.stand_in("vllm.platforms", current_platform=platform)
emulate.stand_in("vllm.triton_utils", triton=triton, tl=tl)
# vLLM's defaults for what the loader and the launcher read from the environment.
emulate.stand_in(
    "vllm.envs", VLLM_TUNED_CONFIG_FOLDER=config_dir, VLLM_BATCH_INVARIANT=False, VLLM_TRITON_USE_TD=None
)
sys.modules.setdefault("regex", re)  # vLLM imports `regex as re` for one pattern `re` reads alike
emulate.stand_in_package("vllm")
emulate.load_source(os.path.join(src, "vllm/utils/platform_utils.py"), "vllm.utils.platform_utils")
# The launcher's helpers (swap-AB, the tensor-descriptor switch) are vLLM's own.
emulate.load_source(os.path.join(src, "vllm/model_executor/layers/fused_moe/utils.py"), "vllm.model_executor.layers.fused_moe.utils")
moe = emulate.load_source(
    os.path.join(src, "vllm/model_executor/layers/fused_moe/fused_moe.py"),
    "vllm.model_executor.layers.fused_moe.fused_moe",
)

HIDDEN, TOP_K = 4096, 2
for shape in shapes:
    e, n, *rest = shape.split(",")
    experts, inter = int(e), int(n)
    dtype = rest[0] if rest else None
    fp8 = dtype == "fp8_w8a8"
    name = moe.get_config_file_name(experts, inter, dtype)
    configs = moe.get_moe_configs(experts, inter, dtype)
    if not configs:
        raise SystemExit(f"vLLM found no config file {name} in {config_dir}")
    print(f"{name}: vLLM loaded {len(configs)} entries")
    weight = torch.float8_e4m3fn if fp8 else torch.bfloat16
    w1 = torch.empty(experts, 2 * inter, HIDDEN, dtype=weight, device="cuda")
    w2 = torch.empty(experts, HIDDEN, inter, dtype=weight, device="cuda")
    for batch in sorted(configs):
        with emulate.call(f"{name} M={batch}"):
            config = moe.try_get_optimal_moe_config(w1.shape, w2.shape, TOP_K, dtype, batch)
            a = torch.empty(batch, HIDDEN, dtype=weight, device="cuda")
            c = torch.empty(batch, TOP_K, 2 * inter, dtype=torch.bfloat16, device="cuda")
            padded = batch * TOP_K + experts * (config["BLOCK_SIZE_M"] - 1)
            sorted_ids = torch.empty(padded, dtype=torch.int32, device="cuda")
            expert_ids = torch.empty(triton.cdiv(padded, config["BLOCK_SIZE_M"]), dtype=torch.int32, device="cuda")
            post_padded = torch.empty(1, dtype=torch.int32, device="cuda")
            weights = torch.empty(batch, TOP_K, dtype=torch.float32, device="cuda")
            a_scale = torch.empty(1, dtype=torch.float32, device="cuda") if fp8 else None
            b_scale = torch.empty(experts, dtype=torch.float32, device="cuda") if fp8 else None
            moe.invoke_fused_moe_triton_kernel(
                a, w1, c, a_scale, b_scale, weights, sorted_ids, expert_ids, post_padded,
                False, TOP_K, config, tl.bfloat16, fp8, False, False, False, False,
            )
