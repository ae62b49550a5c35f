"""The run whose records are the contract's fixture (``records.json``): a plain launch with each
kind of argument (pointers, ints, None, a constexpr and a ``tl`` dtype constexpr), an autotuned
launch, a value assumed and a check passed over. Its line numbers are in the fixture: an edit here
is a new fixture (``TILEFIT_WRITE_CONTRACT=1``)."""

import os

import triton
import triton.language as tl

from tilefit import _capture, _state

HERE = os.path.dirname(os.path.abspath(__file__))


@triton.jit
def scale(x_ptr, out_ptr, n, factor, mask_ptr, BLOCK: tl.constexpr, KIND: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(out_ptr + offsets, (x * factor).to(KIND), mask=offsets < n)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 64}, num_warps=2),
        triton.Config({"BLOCK": 128}, num_warps=4, num_stages=3),
    ],
    key=["n"],
)
@triton.jit
def tuned(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(
        x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n
    )


def run(device):
    import torch

    recorder = _capture.Recorder(device)
    _capture.install(recorder, _state.RUN.emulation)
    recorder.begin_call("contract")
    _capture.add_user_root(HERE + os.sep)
    x = torch.randn(1000, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    scale[(16,)](x, out, 1000, 1, None, BLOCK=64, KIND=tl.float16)
    tuned[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, 1000)
    # An assumption (memory never written) and a check passed over.
    _assumed = int(torch.empty(4, device="cuda", dtype=torch.int32).sum().item())
    torch.testing.assert_close(x, out)
    recorder.exit = 0
    return recorder.as_json()
