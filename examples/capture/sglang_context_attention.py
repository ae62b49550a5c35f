"""SGLang 0.5.23's `context_attention_fwd` (sglang#27962) run from SGLang's own host code, with the
shapes of SGLang's `test_context_attention`: 4 heads, head_dim 128, sequence lengths 8 and 12,
float32 tensors. The launcher picks `BLOCK = 128` when the capability it read at import is above
8.x, else 64.

    pip download sglang==0.5.23 --no-deps -d wheels && unzip -q wheels/sglang-*.whl -d sglang-src
    tilefit capture examples/capture/sglang_context_attention.py --targets rtx-pro-6000,a100 \
        -- sglang-src/sglang/kernels/ops/attention/prefill_attention.py

SGLang need not be installed: `sglang.srt.utils` is stood in with its own definitions of
`is_cuda` and `is_hip` (read from torch, so they answer for the emulated device).
"""

import sys

import torch

from tilefit import emulate

emulate.stand_in(
    "sglang.srt.utils",
    is_cuda=lambda: torch.cuda.is_available() and torch.version.cuda is not None,
    is_hip=lambda: torch.version.hip is not None,
)
prefill = emulate.load_source(sys.argv[1], "sglang.kernels.ops.attention.prefill_attention")

heads, head_dim, seq_lens = 4, 128, [8, 12]
total = sum(seq_lens)
q = torch.randn(total, heads, head_dim, dtype=torch.float32, device="cuda")
k = torch.randn(total, heads, head_dim, dtype=torch.float32, device="cuda")
v = torch.randn(total, heads, head_dim, dtype=torch.float32, device="cuda")
o = torch.zeros(total, heads, head_dim, dtype=torch.float32, device="cuda")
b_seq_len = torch.tensor(seq_lens, dtype=torch.int32, device="cuda")
b_start_loc = torch.tensor([0, seq_lens[0]], dtype=torch.int32, device="cuda")

prefill.context_attention_fwd(q, k, v, o, b_start_loc, b_seq_len, max(seq_lens))
