"""pytorch PR #178023's case, with torch 2.11 as shipped: under max-autotune Inductor fuses a
layer norm's backward with its weight gradient (a mix-order reduction: XBLOCK 1, RSPLIT_SIZE 16,
NUM_STAGES 1) and its persistent-reduction autotune doubles each config's warps, up to 32 (the
cap the PR lowered to 16 for HIP). On MI350/MI355X (wavefront 64) 32 warps are 2,048 threads,
over the 1,024 a block may have. The PR saw the launch fail; Triton 3.5 and later raise
OutOfResources "threads" for it on AMD too, and Inductor drops the config.

    tilefit capture examples/threads/inductor_layer_norm.py --targets mi355x,h100
"""

import torch
import torch._inductor.config as inductor_config
import torch.nn.functional as F

inductor_config.max_autotune = True


def layer_norm(x, weight, bias):
    return F.layer_norm(x, (x.shape[-1],), weight, bias)


# Mix-order reduction wants at least 4,096 rows, twice as many rows as columns; 16,384 columns
# take the reduction past 8,192, where its warps may reach 32.
rows, columns = 32768, 16384
x = torch.randn(rows, columns, device="cuda", requires_grad=True)
weight = torch.randn(columns, device="cuda", requires_grad=True)
bias = torch.randn(columns, device="cuda", requires_grad=True)
torch.compile(layer_norm)(x, weight, bias).sum().backward()
