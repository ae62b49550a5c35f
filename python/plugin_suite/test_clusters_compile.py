"""A suite for the pytest plugin that needs no GPU and passes, but whose kernel cannot compile for
every device of the fleet: a thread-block cluster launch (``num_ctas=2``), compiled for sm_90 with
``triton.compile``. Triton refuses ``num_ctas > 1`` below sm_90, so the plugin's replay for an A100
reports a compile error, and the session must fail on it."""

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def test_clustered_copy_compiles_for_sm_90():
    kernel = triton.compile(
        ASTSource(
            copy_kernel,
            {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
            {(3,): 128},
            {},
        ),
        target=GPUTarget("cuda", 90, 32),
        options={"num_ctas": 2, "num_warps": 4},
    )
    assert kernel.metadata.num_ctas == 2
