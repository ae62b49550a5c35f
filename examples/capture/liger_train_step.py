"""A training step through Liger-Kernel's own kernels, forward and backward: RMSNorm, a SwiGLU MLP,
RoPE and the fused linear cross entropy, as a Llama-shaped layer uses them (bf16, hidden 2048,
intermediate 5632, 16 heads of 128, vocabulary 32,000, 2 x 512 tokens).

    pip download liger-kernel==0.8.5 --no-deps -d wheels && unzip -q wheels/liger_kernel-*.whl -d liger
    PYTHONPATH=liger tilefit capture examples/capture/liger_train_step.py --targets h100
    PYTHONPATH=liger python3 scripts/capture_truth.py record real.json examples/capture/liger_train_step.py

Nothing here is tilefit's: it is the script a Liger user writes. Under `tilefit capture` every
launch, forward and backward, is judged; on a GPU it runs for real.
"""

import torch
from liger_kernel.transformers.functional import (
    liger_fused_linear_cross_entropy,
    liger_rms_norm,
    liger_rope,
    liger_swiglu,
)

torch.manual_seed(0)
batch, seq, hidden, inter, heads, head_dim, vocab = 2, 512, 2048, 5632, 16, 128, 32000
dtype = torch.bfloat16


def param(*shape):
    return torch.randn(*shape, dtype=dtype, device="cuda").mul_(0.02).requires_grad_()


x = torch.randn(batch, seq, hidden, dtype=dtype, device="cuda", requires_grad=True)
norm_w = param(hidden)
gate, up, down = param(inter, hidden), param(inter, hidden), param(hidden, inter)
lm_head = param(vocab, hidden)
q = torch.randn(batch, heads, seq, head_dim, dtype=dtype, device="cuda", requires_grad=True)
k = torch.randn(batch, heads, seq, head_dim, dtype=dtype, device="cuda", requires_grad=True)
cos = torch.randn(1, seq, head_dim, dtype=dtype, device="cuda")
sin = torch.randn(1, seq, head_dim, dtype=dtype, device="cuda")
labels = torch.randint(0, vocab, (batch * seq,), device="cuda")

h = liger_rms_norm(x, norm_w, 1e-6, in_place=False)
mlp = liger_swiglu(h @ gate.t(), h @ up.t()) @ down.t()
q_rot, k_rot = liger_rope(q, k, cos, sin)
hidden_out = (h + mlp).reshape(-1, hidden)
loss = (hidden_out.float().square().mean() + q_rot.float().sum() * 0.0 + k_rot.float().sum() * 0.0)
loss.backward()
# The fused linear cross entropy counts the labels it keeps on the host (`.item()`): under
# emulation that call stops there (and the report says where); on a GPU it runs, forward and
# its in-forward gradients.
try:
    liger_fused_linear_cross_entropy(hidden_out.detach().requires_grad_(), lm_head, labels).backward()
except Exception as error:  # noqa: BLE001 (a stopped call is in the report, with its line)
    print("fused linear cross entropy:", type(error).__name__)
torch.cuda.synchronize()
