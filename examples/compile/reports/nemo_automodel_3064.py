"""NVIDIA-NeMo/Automodel#3064 (Gemma 4's head_dim 512 layers through the FFPA-to-FlexAttention
fallback on an H100: "triton_tem_fused_flex_attention_0 Required: 263168 Hardware limit:
232448"), from the model code's mask: an image-bidirectional BlockMask whose mask_mod reads the
tokens' image-group ids (int64, 0 for text): causal, and bidirectional inside one image. The
default config for head_dim 512 is BLOCK_M=64, BLOCK_N=32, num_stages=3."""

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

S = 2048
image_group = torch.zeros(S, dtype=torch.int64, device="cuda")
image_group[128:640] = 1


def image_bidirectional(b, h, q_idx, kv_idx):
    same_image = (image_group[q_idx] > 0) & (image_group[q_idx] == image_group[kv_idx])
    return (q_idx >= kv_idx) | same_image


block_mask = create_block_mask(image_bidirectional, 1, 1, S, S, device="cuda")
q, k, v = (
    torch.randn(1, 8, S, 512, device="cuda", dtype=torch.bfloat16) for _ in range(3)
)
print(torch.compile(flex_attention)(q, k, v, block_mask=block_mask).shape)
