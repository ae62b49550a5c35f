"""sglang PR #37803 from SGLang's own source: Inkling's MoE host code (sglang 0.5.23, whose
`grouped_gemm_triton` picks `"num_stages": 3 if is_sm121() else 4` for its small-M tile) run under
the emulated device. An RTX 5090 is sm_120, not sm_121: 4 stages, 110,592 bytes, over its
101,376; a GB10 gets 3 stages, 73,728 bytes, and fits.

    pip download --no-deps sglang==0.5.23 && unzip -q sglang-0.5.23-*.whl 'sglang/*' -d SGLANG
    pip install --target DEPS orjson psutil pybase64 requests pillow starlette msgspec pydantic \
        pyzmq tqdm IPython aiohttp   # what sglang.srt.utils.common imports; torch from the venv
    tilefit capture examples/capture/sglang_inkling.py --targets rtx-5090,gb10 -- SGLANG DEPS

Nothing of SGLang is edited or stubbed. The call sequence is `moe_tp_forward`'s decode band
(`sglang/srt/models/inkling_common/moe.py`) with only `inkling_moe.py`'s functions, since `moe.py`
itself imports transformers and torchvision; the shapes are Inkling-Small's as measured on GB10
in sglang PR #33108 (hidden 4096, MoE intermediate 2048, 256 experts, top 6, bf16).
"""

import sys

sglang_dir, deps_dir = sys.argv[1:3]
sys.path[:0] = [sglang_dir, deps_dir]

import torch  # noqa: E402
from sglang.kernels.ops.moe import inkling_moe as im  # noqa: E402
from sglang.srt.utils import common  # noqa: E402

HIDDEN = 4096
INTER = 2048
E = 256
TOP_K = 6
DTYPE = torch.bfloat16

# What SGLang's arch detection sees under the emulated device.
print(
    "device:",
    torch.cuda.get_device_name(),
    "capability:",
    torch.cuda.get_device_capability(),
    "torch.version.cuda:",
    torch.version.cuda,
)
print(
    f"sglang detection: is_cuda()={common.is_cuda()} is_sm120()={common.is_sm120()} "
    f"is_sm121()={common.is_sm121()} get_device_sm()={common.get_device_sm()} "
    f"is_sm120_supported()={common.is_sm120_supported()}"
)

dev = "cuda"
w13 = torch.empty(E, 2 * INTER, HIDDEN, dtype=DTYPE, device=dev)  # [E, 2f, D]
w2 = torch.empty(E, HIDDEN, INTER, dtype=DTYPE, device=dev)  # [E, D, f]


def moe_decode(num_tokens: int) -> torch.Tensor:
    """moe_tp_forward's decode band (n = T*top_k <= FUSED_PREPROCESS_WIN_TOKENS)."""
    hidden = torch.empty(num_tokens, HIDDEN, dtype=DTYPE, device=dev)
    topk_ids = torch.randint(0, E, (num_tokens, TOP_K), dtype=torch.int32, device=dev)
    topk_weights = torch.empty(num_tokens, TOP_K, dtype=torch.float32, device=dev)
    n = topk_ids.numel()
    assert 0 < n <= im.FUSED_PREPROCESS_WIN_TOKENS
    (src2dst, ntpe, eto, ebo, ebs, _reorder) = im.fused_moe_preprocess(
        topk_ids.view(-1), E
    )
    block_m = im.select_grouped_gemm_block_m(n)
    print(f"T={num_tokens} routed rows={n} block_size_m={block_m}")
    x = im.pre_reorder(hidden, src2dst, TOP_K)
    gateup = im.grouped_gemm_triton(
        x, w13, E, ntpe, eto, ebo, ebs, block_size_m=block_m
    )
    down_in = im.silu_and_mul(gateup, None, None, use_interleaved=True)
    down = im.grouped_gemm_triton(
        down_in, w2, E, ntpe, eto, ebo, ebs, block_size_m=block_m
    )
    return im.post_reorder(down, src2dst, topk_weights)


def moe_prefill(num_tokens: int) -> torch.Tensor:
    """Large-M band (n > GROUPED_GEMM_SMALL_M_MAX): BLOCK_SIZE_M=128, 3 stages."""
    topk_ids = torch.randint(0, E, (num_tokens, TOP_K), dtype=torch.int32, device=dev)
    n = topk_ids.numel()
    block_m = im.select_grouped_gemm_block_m(n)
    print(f"T={num_tokens} routed rows={n} block_size_m={block_m}")
    reorder_topk_ids, _ = torch.sort(topk_ids.view(-1).to(torch.int16), stable=True)
    ntpe, eto, ebo, ebs = im.compute_grouped_gemm_metadata(
        reorder_topk_ids, E, block_size_m=block_m
    )
    x = torch.empty(n, HIDDEN, dtype=DTYPE, device=dev)
    return im.grouped_gemm_triton(x, w13, E, ntpe, eto, ebo, ebs, block_size_m=block_m)


moe_decode(8)  # sparse decode: the small-M path PR #37803 is about
moe_prefill(2048)  # 12,288 routed rows: the BLOCK_SIZE_M=128 path (control)
print("done")
