"""MLA decode, stage 1: grouped query heads against a paged latent KV cache.

Written by the tilefit team after the shape of vLLM's `_fwd_grouped_kernel_stage1` (the kernel in
docs/reference/sm120-shared-memory-cliff.md): BLOCK_H query heads share one latent KV head; the
key is a 512-wide latent plus a 64-wide rope part; the value is the same latent read again
(V is the latent, read transposed relative to K). An fp8 KV cache is dequantized to bf16 before
each dot, which is what makes the fp8 path need more shared memory per pipeline stage.
"""

import triton
import triton.language as tl


@triton.jit
def mla_decode_stage1(
    Q,
    K_Buffer,
    sm_scale,
    k_scale,
    Req_to_tokens,
    B_Seqlen,
    Att_Out,
    stride_req_to_tokens_b,
    stride_qbs,
    stride_qh,
    stride_buf_kbs,
    stride_mid_ob,
    stride_mid_oh,
    stride_mid_os,
    kv_group_num: tl.constexpr,
    q_head_num: tl.constexpr,
    BLOCK_DMODEL: tl.constexpr,
    BLOCK_DPE: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_H: tl.constexpr,
    NUM_KV_SPLITS: tl.constexpr,
    PAGE_SIZE: tl.constexpr,
    logit_cap: tl.constexpr,
    Lk: tl.constexpr,
    Lv: tl.constexpr,
):
    cur_batch = tl.program_id(0)
    cur_head_id = tl.program_id(1)
    split_kv_id = tl.program_id(2)

    if kv_group_num > BLOCK_H:
        VALID_BLOCK_H: tl.constexpr = BLOCK_H
    else:
        VALID_BLOCK_H: tl.constexpr = kv_group_num
    cur_head = cur_head_id * VALID_BLOCK_H + tl.arange(0, BLOCK_H)
    mask_h = (cur_head < (cur_head_id + 1) * VALID_BLOCK_H) & (cur_head < q_head_num)

    offs_d = tl.arange(0, BLOCK_DMODEL)
    offs_dv = tl.arange(0, BLOCK_DV)
    offs_dpe = BLOCK_DMODEL + tl.arange(0, BLOCK_DPE)
    mask_d = offs_d < Lk
    mask_dv = offs_dv < Lv
    mask_dpe = offs_dpe < Lk
    seq_len = tl.load(B_Seqlen + cur_batch)

    q_rows = cur_batch * stride_qbs + cur_head[:, None] * stride_qh
    q = tl.load(Q + q_rows + offs_d[None, :], mask=mask_h[:, None] & mask_d[None, :], other=0.0)
    qpe = tl.load(Q + q_rows + offs_dpe[None, :], mask=mask_h[:, None] & mask_dpe[None, :], other=0.0)

    per_split = tl.cdiv(seq_len, NUM_KV_SPLITS)
    split_start = per_split * split_kv_id
    split_end = tl.minimum(split_start + per_split, seq_len)

    e_max = tl.zeros([BLOCK_H], dtype=tl.float32) - float("inf")
    e_sum = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, BLOCK_DV], dtype=tl.float32)

    if split_end > split_start:
        ks = tl.load(k_scale)
        for start_n in range(split_start, split_end, BLOCK_N):
            offs_n = start_n + tl.arange(0, BLOCK_N)
            in_range = offs_n < split_end
            page = tl.load(
                Req_to_tokens + stride_req_to_tokens_b * cur_batch + offs_n // PAGE_SIZE,
                mask=in_range,
                other=0,
            )
            kv_loc = page * PAGE_SIZE + offs_n % PAGE_SIZE

            # K: the latent, [BLOCK_DMODEL, BLOCK_N]
            k = tl.load(
                K_Buffer + kv_loc[None, :] * stride_buf_kbs + offs_d[:, None],
                mask=in_range[None, :] & mask_d[:, None],
                other=0.0,
            )
            if k.dtype.is_fp8():
                k = (k.to(tl.float32) * ks).to(q.dtype)
            qk = tl.dot(q, k)

            # the rope part of the key, [BLOCK_DPE, BLOCK_N]
            kpe = tl.load(
                K_Buffer + kv_loc[None, :] * stride_buf_kbs + offs_dpe[:, None],
                mask=in_range[None, :] & mask_dpe[:, None],
                other=0.0,
            )
            if kpe.dtype.is_fp8():
                kpe = (kpe.to(tl.float32) * ks).to(qpe.dtype)
            qk += tl.dot(qpe, kpe)
            qk *= sm_scale
            if logit_cap > 0:
                qk = logit_cap * tl.extra.cuda.libdevice.tanh(qk / logit_cap)
            qk = tl.where(mask_h[:, None] & in_range[None, :], qk, float("-inf"))

            # V: the same latent, read as [BLOCK_N, BLOCK_DV]
            v = tl.load(
                K_Buffer + kv_loc[:, None] * stride_buf_kbs + offs_dv[None, :],
                mask=in_range[:, None] & mask_dv[None, :],
                other=0.0,
            )
            if v.dtype.is_fp8():
                v = (v.to(tl.float32) * ks).to(q.dtype)

            n_e_max = tl.maximum(tl.max(qk, 1), e_max)
            re_scale = tl.exp(e_max - n_e_max)
            p = tl.exp(qk - n_e_max[:, None])
            acc *= re_scale[:, None]
            acc += tl.dot(p.to(v.dtype), v)
            e_sum = e_sum * re_scale + tl.sum(p, 1)
            e_max = n_e_max

        out_rows = cur_batch * stride_mid_ob + cur_head * stride_mid_oh + split_kv_id * stride_mid_os
        tl.store(
            Att_Out + out_rows[:, None] + offs_dv[None, :],
            acc / e_sum[:, None],
            mask=mask_h[:, None] & mask_dv[None, :],
        )
        tl.store(Att_Out + out_rows + Lv, e_max + tl.log(e_sum), mask=mask_h)
