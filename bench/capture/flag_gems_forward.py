"""A forward pass through FlagGems' autotuned kernels (mm, bmm, addmm), as a user calls them."""

import flag_gems
import torch

a = torch.randn(1024, 2048, dtype=torch.float16, device="cuda")
b = torch.randn(2048, 4096, dtype=torch.float16, device="cuda")
c = flag_gems.mm(a, b)
x = torch.randn(8, 512, 256, dtype=torch.float16, device="cuda")
y = torch.randn(8, 256, 512, dtype=torch.float16, device="cuda")
z = flag_gems.bmm(x, y)
bias = torch.randn(4096, dtype=torch.float16, device="cuda")
w = flag_gems.addmm(bias, a, b)
