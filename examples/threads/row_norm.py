"""A persistent row reduction, the shape of Inductor's `triton_per_fused_native_layer_norm_*`
kernels: one program per row, the whole row in registers, `num_warps` warps sharing it. A block
has num_warps x warp size threads: 32 warps are 1,024 threads on NVIDIA (warp size 32) and 2,048
on AMD CDNA (wavefront 64), over the 1,024 a block may have there."""

import triton
import triton.language as tl


@triton.jit
def row_norm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centered = tl.where(mask, x - mean, 0.0)
    var = tl.sum(centered * centered, axis=0) / n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = centered * tl.rsqrt(var + eps) * w
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
