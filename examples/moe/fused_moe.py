"""A fused mixture-of-experts GEMM, the shape serving engines tune per device: tokens sorted by the
expert they were routed to, one BLOCK_SIZE_M x BLOCK_SIZE_N tile of the output per program, a K
loop over BLOCK_SIZE_K slices of the token's activations and its expert's weights, software-
pipelined `num_stages` deep. Shared memory grows with (BLOCK_SIZE_M + BLOCK_SIZE_N) x
BLOCK_SIZE_K x element size x stages, so a config tuned on a 227 KiB Hopper can miss a 99 KiB
workstation or consumer card. Written for tilefit's examples; the engines' per-device config files
(`configs/`) map a batch size to a config of this kernel."""

import triton
import triton.language as tl


@triton.jit
def fused_moe_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    topk_weights_ptr,
    sorted_token_ids_ptr,
    expert_ids_ptr,
    num_tokens_post_padded_ptr,
    N,
    K,
    EM,
    num_valid_tokens,
    stride_am,
    stride_ak,
    stride_be,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    MUL_ROUTED_WEIGHT: tl.constexpr,
    top_k: tl.constexpr,
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
):
    # Grouped ordering of the output tiles, for L2 reuse of the expert weights.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(EM, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    group = GROUP_SIZE_M * num_pid_n
    first_m = (pid // group) * GROUP_SIZE_M
    group_m = min(num_pid_m - first_m, GROUP_SIZE_M)
    pid_m = first_m + ((pid % group) % group_m)
    pid_n = (pid % group) // group_m

    if pid_m * BLOCK_SIZE_M >= tl.load(num_tokens_post_padded_ptr):
        return
    # The tile's rows are (token, expert) pairs sorted by expert; padding rows are masked.
    rows = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    tokens = tl.load(sorted_token_ids_ptr + rows)
    valid = tokens < num_valid_tokens
    expert = tl.load(expert_ids_ptr + pid_m)

    cols = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    ks = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (tokens[:, None] // top_k) * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + expert * stride_be + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        left = K - k * BLOCK_SIZE_K
        a = tl.load(a_ptrs, mask=valid[:, None] & (ks[None, :] < left), other=0.0)
        b = tl.load(b_ptrs, mask=ks[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if MUL_ROUTED_WEIGHT:
        weights = tl.load(topk_weights_ptr + tokens, mask=valid, other=0.0)
        acc = acc * weights[:, None]
    out = acc.to(c_ptr.dtype.element_ty)
    out_cols = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + tokens[:, None] * stride_cm + out_cols[None, :] * stride_cn
    tl.store(c_ptrs, out, mask=valid[:, None] & (out_cols[None, :] < N))
