"""A small suite for the pytest plugin, as a kernel library's own test would be: it launches the
MLA example's kernel with an fp8 KV cache at BLOCK_N=64, num_stages=2 (the config an engine tuned on
an H100 would ship) and checks the launch wrote finite values. Needs a CUDA device.

    pytest --tilefit-fleet=h100,rtx-pro-6000 python/plugin_suite
"""

import os
import sys

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

sys.path.insert(
    0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "mla_decode")
)
# After the skips: the example imports Triton, which a machine without CUDA may lack.
from mla_decode import mla_decode_stage1  # noqa: E402


def test_mla_decode_fp8_two_stages():
    batch, heads, lk, lv, splits, max_len = 2, 16, 576, 512, 8, 256
    q = torch.randn(batch, heads, lk, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch * max_len, 1, lk, device="cuda").to(torch.float8_e4m3fn)
    k_scale = torch.ones(1, device="cuda", dtype=torch.float32)
    req = torch.arange(batch * max_len, device="cuda", dtype=torch.int32).view(
        batch, max_len
    )
    seq = torch.full((batch,), 200, device="cuda", dtype=torch.int32)
    out = torch.zeros(batch, heads, splits, lv + 1, device="cuda", dtype=torch.float32)
    mla_decode_stage1[(batch, 1, splits)](
        q,
        k,
        0.04,
        k_scale,
        req,
        seq,
        out,
        req.stride(0),
        q.stride(0),
        q.stride(1),
        k.stride(0),
        out.stride(0),
        out.stride(1),
        out.stride(2),
        kv_group_num=16,
        q_head_num=16,
        BLOCK_DMODEL=512,
        BLOCK_DPE=64,
        BLOCK_DV=512,
        BLOCK_N=64,
        BLOCK_H=16,
        NUM_KV_SPLITS=splits,
        PAGE_SIZE=1,
        logit_cap=0.0,
        Lk=lk,
        Lv=lv,
        num_warps=4,
        num_stages=2,
    )
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    assert out.abs().sum() > 0
