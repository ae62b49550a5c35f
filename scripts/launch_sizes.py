"""Launch the example kernels for real on a local GPU and print the shared memory each compiled
launch reports, as JSON lines. This is the ground truth a probe must reproduce: the launch goes
through Triton's JIT with real tensors, so the specialization is whatever a real launch gets.

usage: python scripts/launch_sizes.py   (needs torch, triton and a GPU; writes JSON lines to stdout)
"""

import importlib.util
import json
import os
import sys

import torch
import triton

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "..", path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def emit(kernel, config, compiled):
    print(json.dumps({"kernel": kernel, "config": config, "shared": compiled.metadata.shared,
                      "n_regs": getattr(compiled, "n_regs", None), "triton": triton.__version__,
                      "device": torch.cuda.get_device_name()}), flush=True)


def mla():
    fn = load("examples/mla_decode/mla_decode.py", "mla").mla_decode_stage1
    dev = "cuda"
    batch, heads, splits, lk, lv = 2, 16, 8, 576, 512
    q = torch.randn(batch, heads, lk, device=dev, dtype=torch.bfloat16)
    req = torch.arange(batch * 256, device=dev, dtype=torch.int32).reshape(batch, 256)
    seqlen = torch.full((batch,), 200, device=dev, dtype=torch.int32)
    out = torch.empty(batch, heads, splits, lv + 1, device=dev, dtype=torch.float32)
    k_scale = torch.ones(1, device=dev, dtype=torch.float32)
    for kv in ["bf16", "fp8e4nv"]:
        dtype = torch.bfloat16 if kv == "bf16" else torch.float8_e4m3fn
        kbuf = torch.randn(batch * 256, lk, device=dev).to(dtype)
        for block_n in [32, 64]:
            for stages in [1, 2]:
                compiled = fn[(batch, heads // 16, splits)](
                    q, kbuf, 0.1, k_scale, req, seqlen, out,
                    req.stride(0), q.stride(0), q.stride(1), kbuf.stride(0),
                    out.stride(0), out.stride(1), out.stride(2),
                    kv_group_num=16, q_head_num=16, BLOCK_DMODEL=512, BLOCK_DPE=64, BLOCK_DV=512,
                    BLOCK_N=block_n, BLOCK_H=16, NUM_KV_SPLITS=splits, PAGE_SIZE=1, logit_cap=0.0,
                    Lk=lk, Lv=lv, num_warps=4, num_stages=stages)
                emit("mla", {"kv_dtype": kv, "BLOCK_N": block_n, "num_stages": stages}, compiled)


def matmul():
    fn = load("examples/matmul/matmul.py", "mm").matmul_kernel
    for size in [4096, 4095]:
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16)
        c = torch.empty(size, size, device="cuda", dtype=torch.float16)
        for stages in [2, 4]:
            compiled = fn[(triton.cdiv(size, 128) * triton.cdiv(size, 128),)](
                a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                c.stride(0), c.stride(1), BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8,
                num_warps=4, num_stages=stages)
            emit("matmul", {"size": size, "num_stages": stages}, compiled)


if __name__ == "__main__":
    torch.cuda.synchronize()
    mla()
    matmul()
    torch.cuda.synchronize()
    sys.exit(0)
