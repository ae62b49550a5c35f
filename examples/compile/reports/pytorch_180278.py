"""pytorch#180278 ("flex_attention with head_dim=192 fails on SM86 GPUs", found in torchtitan's
CI), from the model code's shapes: MLA's qk_head_dim 192 and v_head_dim 128, bf16, B=1, H=16,
S=2048, through a causal document mask over int32 document ids. On sm_86 torch 2.11's forward
falls through to FlexConfig(64, 64, 3, 4): 139,776 bytes against 101,376. torch 2.15 carries
the report's fix (FlexConfig(128, 32, 2, 8) for head_dim 192)."""

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

S = 2048
document = (torch.arange(S, device="cuda") // 512).to(torch.int32)


def causal_document(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (document[q_idx] == document[kv_idx])


block_mask = create_block_mask(causal_document, 1, 1, S, S, device="cuda")
q = torch.randn(1, 16, S, 192, device="cuda", dtype=torch.bfloat16)
k = torch.randn(1, 16, S, 192, device="cuda", dtype=torch.bfloat16)
v = torch.randn(1, 16, S, 128, device="cuda", dtype=torch.bfloat16)
print(torch.compile(flex_attention)(q, k, v, block_mask=block_mask).shape)
