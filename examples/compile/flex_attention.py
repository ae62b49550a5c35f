"""flex attention as users call it: `torch.compile(flex_attention)` on q, k, v of (1, 8, 2048,
HEAD_DIM) (`python flex_attention.py [HEAD_DIM] [bf16|fp32] [--backward] [--kernel-options
JSON]`).

Inductor takes the forward's tile sizes and stages from a table chosen by the device's
capability, so the same line fits one GPU and fails on another with `No valid triton configs`.
Run it under `tilefit capture --targets h100,rtx-pro-6000,a10 flex_attention.py -- 192`."""

import json
import sys

import torch
from torch.nn.attention.flex_attention import flex_attention

head_dim = int(sys.argv[1]) if len(sys.argv) > 1 else 128
dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[
    sys.argv[2] if len(sys.argv) > 2 else "bf16"
]
backward = "--backward" in sys.argv
# What a fix names: `--kernel-options '{"BLOCK_M": 32, "num_stages": 1}'`.
options = (
    json.loads(sys.argv[sys.argv.index("--kernel-options") + 1])
    if "--kernel-options" in sys.argv
    else None
)

attention = torch.compile(flex_attention)
q, k, v = (
    torch.randn(
        1, 8, 2048, head_dim, device="cuda", dtype=dtype, requires_grad=backward
    )
    for _ in range(3)
)
out = attention(q, k, v, kernel_options=options)
if backward:
    out.sum().backward()
print(tuple(out.shape))
