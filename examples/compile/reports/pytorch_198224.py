"""pytorch#198224 (flex attention's backward with head_dim > 128 on a GB10: "No valid triton
configs"), from its shapes: bf16, B=2, H=8, S=2048, head_dim 192, forward and backward. The
sm_12x backward default FlexBwDConfig(64, 64, 64, 64, 1, 4) needs 114,688 bytes against
101,376."""

import torch
from torch.nn.attention.flex_attention import flex_attention

q, k, v = (
    torch.randn(
        2, 8, 2048, 192, device="cuda", dtype=torch.bfloat16, requires_grad=True
    )
    for _ in range(3)
)
torch.compile(flex_attention)(q, k, v).sum().backward()
