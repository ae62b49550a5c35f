"""Real workloads for `tilefit replay` on a GPU machine (scripts/h200_field.sh runs them).

usage:
  python field_workload.py torch          # torch.compile runs: Inductor's cache gets their kernels
  python field_workload.py trace FOLDER   # Triton kernels launched under tritonparse's tracing

`torch` compiles a GEMM with max-autotune (Inductor's Triton matmul templates, several tile
configs), a fused layer norm and a softmax, and runs each once. Inductor writes the Triton cache
under its own cache folder (TORCHINDUCTOR_CACHE_DIR, or /tmp/torchinductor_<user>), which is where
`tilefit replay` with no argument looks.

`trace` launches the examples' matmul kernel at two tile configs with tritonparse's structured
logging on (plain NDJSON), so the trace's compilation events carry the metadata and the IR.
Prints one JSON line per step for the log.
"""

import json
import os
import sys
import time


def torch_workload():
    import torch

    torch.manual_seed(0)
    device = "cuda"
    started = time.time()

    def gemm(a, b):
        return torch.relu(a @ b)

    def layer_norm(x, w, bias):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, bias) * 2.0

    def softmax(x):
        return torch.softmax(x * 0.5, dim=-1)

    a = torch.randn(2048, 4096, device=device, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
    x = torch.randn(4096, 8192, device=device, dtype=torch.float16)
    w = torch.randn(8192, device=device, dtype=torch.float16)
    bias = torch.randn(8192, device=device, dtype=torch.float16)
    compiled = torch.compile(gemm, mode="max-autotune-no-cudagraphs")
    compiled(a, b)
    torch.compile(layer_norm)(x, w, bias)
    torch.compile(softmax)(x)
    torch.cuda.synchronize()
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    print(json.dumps({"step": "torch.compile", "seconds": round(time.time() - started, 1),
                      "inductor_cache": cache_dir(), "torch": torch.__version__}))


def trace_workload(folder):
    import torch
    import triton
    import tritonparse.structured_logging

    tritonparse.structured_logging.init(folder, compression="none")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "examples", "matmul"))
    from matmul import matmul_kernel

    m = n = k = 1024
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    for block_m, block_n, block_k, stages in ((64, 64, 32, 2), (128, 128, 64, 4)):
        grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
        compiled = matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                       c.stride(0), c.stride(1),
                                       BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8,
                                       num_warps=4, num_stages=stages)
        print(json.dumps({"step": "traced launch", "tiles": [block_m, block_n, block_k],
                          "num_stages": stages, "shared": int(compiled.metadata.shared)}))
    torch.cuda.synchronize()
    print(json.dumps({"step": "trace", "files": sorted(os.listdir(folder))}))


if __name__ == "__main__":
    if sys.argv[1] == "torch":
        torch_workload()
    elif sys.argv[1] == "trace":
        trace_workload(sys.argv[2])
    else:
        sys.exit(__doc__)
