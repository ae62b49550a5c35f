"""A suite for the pytest plugin that needs no GPU: it compiles the matmul example for sm_90 with
``triton.compile`` (128x256x64 bf16 tiles, 8 warps, 4 stages), as a kernel library's CPU-side
test might. The plugin then replays the compiled kernel for the fleet. With TILEFIT_SUITE_OUT set,
the compiler's bytes are written there.

As a script, ``python test_matmul_compile.py sm_120`` compiles the same config for another arch
and prints its bytes: the plugin's test checks the replay against that direct compile."""

import os
import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(
    0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "matmul")
)
from matmul import matmul_kernel


def compile_for(arch):
    """The config compiled directly for ``arch`` (``sm_90``); its ``metadata.shared``."""
    fn = matmul_kernel
    names = [p.name for p in fn.params]
    # Unit strides are constants, as the JIT makes an int equal to 1: the loads are contiguous and
    # the K loop pipelines.
    constexprs = {
        "BLOCK_M": 128,
        "BLOCK_N": 256,
        "BLOCK_K": 64,
        "GROUP_M": 8,
        "stride_ak": 1,
        "stride_bn": 1,
        "stride_cn": 1,
    }
    types = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16"}
    signature = {
        n: "constexpr" if n in constexprs else types.get(n, "i32") for n in names
    }
    divisible = [
        "a_ptr",
        "b_ptr",
        "c_ptr",
        "M",
        "N",
        "K",
        "stride_am",
        "stride_bk",
        "stride_cm",
    ]
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in divisible}
    constants = {(names.index(n),): v for n, v in constexprs.items()}
    kernel = triton.compile(
        ASTSource(fn, signature, constants, attrs),
        target=GPUTarget("cuda", int(arch.removeprefix("sm_")), 32),
        options={"num_warps": 8, "num_stages": 4},
    )
    return kernel.metadata.shared


def test_matmul_compiles_for_sm_90():
    shared = compile_for("sm_90")
    assert shared > 0
    out = os.environ.get("TILEFIT_SUITE_OUT")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(str(shared))


if __name__ == "__main__":
    print(compile_for(sys.argv[1]))
