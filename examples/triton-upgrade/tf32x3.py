"""triton-lang/triton#11526: a projection `x @ w.T` with x in bf16 and w in fp32, the dot at
`input_precision` "tf32" or "tf32x3" (three tf32 passes, fp32-accurate), the shape of
TransformerEngine's mHC projection kernel that broke its L40 CI. Triton 3.8.0 keeps an fp32 copy
of both operands for tf32x3 beside the pipelined buffers: a fixed amount more per block, which
3.9.0 gives back."""

import triton
import triton.language as tl


@triton.jit
def projection(
    x_ptr,
    w_ptr,
    o_ptr,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    STEP_K: tl.constexpr,
    PRECISION: tl.constexpr,
):
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, STEP_K):
        ks = k + tl.arange(0, STEP_K)
        x = tl.load(x_ptr + offs_m[:, None] * K + ks[None, :])
        w = tl.load(w_ptr + offs_n[:, None] * K + ks[None, :])
        acc = tl.dot(x.to(w.dtype), tl.trans(w), acc, input_precision=PRECISION)
    tl.store(o_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc)
