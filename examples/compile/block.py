"""A small transformer block's training step under torch.compile: flex attention and an MLP,
forward and backward (`python block.py [MODE]`; MODE is a torch.compile mode, `default` or
`max-autotune-no-cudagraphs`, under which every matmul is a max-autotune selection)."""

import sys

import torch
from torch import nn
from torch.nn.attention.flex_attention import flex_attention

mode = sys.argv[1] if len(sys.argv) > 1 else "default"
batch, heads, seq, head_dim = 2, 8, 1024, 64
width = heads * head_dim


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, x):
        qkv = self.qkv(self.norm1(x)).view(batch, seq, 3, heads, head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        attended = flex_attention(q, k, v)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, width))
        return x + self.mlp(self.norm2(x))


torch.manual_seed(0)
block = Block().cuda().to(torch.bfloat16)
step = torch.compile(block, mode=None if mode == "default" else mode)
x = torch.randn(batch, seq, width, device="cuda", dtype=torch.bfloat16)
step(x).float().pow(2).mean().backward()
print("block step done:", mode)
