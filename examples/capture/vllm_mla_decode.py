"""vLLM 0.27.1's MLA decode attention (the founding case, vllm#53748) run from vLLM's own host code:
`decode_attention_fwd` with DeepSeek's MLA shapes (Lk 576, Lv 512), bf16 queries, an fp8 KV cache,
page size 1 and 8 KV splits.

    pip download vllm==0.27.1 --no-deps -d wheels && unzip -q wheels/vllm-*.whl -d vllm-src
    tilefit capture examples/capture/vllm_mla_decode.py --targets rtx-pro-6000,gb10,h100,mi300x \
        -- vllm-src/vllm/v1/attention/ops/triton_decode_attention.py

The module is vLLM's unmodified file; vLLM itself need not be installed: `vllm.platforms` and
`vllm.triton_utils` are stood in, and the stand-in platform answers for the (emulated) device, so
`is_hip_` is the target's. Without `tilefit capture` the script runs the kernels for real.
"""

import sys

import torch
import triton
import triton.language as tl

from tilefit import emulate

emulate.stand_in("vllm.platforms", current_platform=emulate.Platform())
emulate.stand_in("vllm.triton_utils", triton=triton, tl=tl)
decode = emulate.load_source(sys.argv[1], "vllm.v1.attention.ops.triton_decode_attention")

batch, heads, kv_heads, tokens = 4, 16, 1, 4096
lk, lv, splits, page_size = 576, 512, 8, 1
fp8 = emulate.Platform().fp8_dtype()

q = torch.randn(batch, heads, lk, dtype=torch.bfloat16, device="cuda")
kv = torch.randn(tokens, kv_heads, lk, dtype=torch.bfloat16, device="cuda").to(fp8)
k_buffer, v_buffer = kv, kv[..., :lv]
o = torch.empty(batch, heads, lv, dtype=torch.bfloat16, device="cuda")
lse = torch.empty(batch, heads, dtype=torch.float32, device="cuda")
req_to_token = torch.arange(tokens, dtype=torch.int32, device="cuda").reshape(batch, tokens // batch)
b_seq_len = torch.full((batch,), tokens // batch, dtype=torch.int32, device="cuda")
attn_logits = torch.empty(batch, heads, splits, lv + 1, dtype=torch.float32, device="cuda")
k_scale = torch.tensor(1.0, dtype=torch.float32, device="cuda")

decode.decode_attention_fwd(
    q, k_buffer, v_buffer, o, lse, req_to_token, b_seq_len, attn_logits, splits,
    sm_scale=1.0 / (lk ** 0.5), page_size=page_size, k_scale=k_scale, v_scale=k_scale, is_mla=True,
)
torch.cuda.synchronize()
