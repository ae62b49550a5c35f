"""A paged-decode attention launcher whose config depends on the shape, as engines write them
(aiter's unified attention, vLLM's and SGLang's decode kernels): short contexts at low
concurrency run one program per sequence and head; many sequences or long contexts switch to the
split-KV path, whose wider key/value tiles are pipelined deeper. A one-shot test at one shape
never reaches that path (aiter#5229, vllm#48723: 256 bytes over on gfx1201, only there)."""

import torch
import triton
import triton.language as tl


@triton.jit
def decode_attention(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq_len,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # BLOCK_M query heads that share one key/value head (grouped-query attention).
    group = tl.program_id(0)
    rows = group * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + rows[:, None] * HEAD_DIM + d[None, :])
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    total = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + n[:, None] * HEAD_DIM + d[None, :])
        v = tl.load(v_ptr + n[:, None] * HEAD_DIM + d[None, :])
        scores = tl.dot(q, tl.trans(k))
        m_new = tl.maximum(m, tl.max(scores, axis=1))
        p = tl.exp(scores - m_new[:, None])
        scale = tl.exp(m - m_new)
        acc = acc * scale[:, None] + tl.dot(p.to(v.dtype), v)
        total = total * scale + tl.sum(p, axis=1)
        m = m_new
    tl.store(o_ptr + rows[:, None] * HEAD_DIM + d[None, :], acc / total[:, None])


def decode(q, k, v, num_seqs, seq_len):
    """The engine's choice: the split-KV path past 64 sequences or 8,192 tokens."""
    split_kv = num_seqs > 64 or seq_len > 8192
    config = (
        {"BLOCK_N": 128, "num_warps": 8, "num_stages": 3}
        if split_kv
        else {"BLOCK_N": 64, "num_warps": 4, "num_stages": 2}
    )
    out = torch.empty_like(q)
    grid = (q.shape[0] // 16,)
    decode_attention[grid](
        q, k, v, out, seq_len, HEAD_DIM=q.shape[-1], BLOCK_M=16, **config
    )
    return out
