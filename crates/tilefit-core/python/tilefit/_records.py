"""A launch as its record: each argument as the JIT specializes it (a pointer's dtype and 16-byte
alignment, an int's value, None, a constexpr or a ``tl`` dtype), the kernel's identity (file,
module-level name, ``@triton.jit`` line, source digest, scope file), the globals it reads, the
grid. What the Rust half reads back as a capture record (``input::capture``).
"""

from __future__ import annotations

import hashlib
import os

from tilefit import _jit, _scope


def dtype_type(dtype):
    from triton._utils import canonicalize_dtype

    return canonicalize_dtype(dtype)


def constexpr(value):
    """A constexpr as JSON: plain values as they are, ``tl`` dtypes as ``"tl.bfloat16"``."""
    import triton.language as tl

    if isinstance(value, tl.constexpr):
        value = value.value
    if _wide_int(value, 2**63):
        # Triton takes any int as a constexpr; a spec's TOML holds 64-bit signed integers.
        raise Unsupported(
            f"an int of {value.bit_length()} bits ({_scope._short(value)}) passed as a "
            "constexpr: tilefit's spec carries integers from -2**63 to 2**63-1 to a compile"
        )
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tl.dtype):
        for name in dir(tl):
            if getattr(tl, name, None) is value or (
                isinstance(getattr(tl, name, None), tl.dtype)
                and getattr(tl, name) == value
                and not name.startswith("_")
            ):
                return f"tl.{name}"
    if type(value).__name__ in ("_Anything", "_AnythingModule"):
        raise Unsupported(
            f"a tilefit stand-in ({value!r}) reached the launch: give the script a real value for it"
        )
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        raise Unsupported("a tensor passed as a constexpr")
    raise Unsupported(
        f"a {_scope._type_name(value)} ({_scope._short(value)}) passed as a constexpr"
    )


def _wide_int(value, end):
    """Whether ``value`` is an int outside ``-2**63 .. end - 1``."""
    return isinstance(value, int) and not -(2**63) <= value < end


class Unsupported(Exception):
    """A launch value tilefit cannot pass to a compile."""


def argument(name, value):
    """A non-constexpr argument as the JIT specializes it (the worker redoes the specialization from
    these: types, values and alignment)."""
    if value is None:
        return {"type": "none"}
    if isinstance(value, bool):
        return {"type": "u1", "value": value}
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            kind = "i32"
        elif -(2**63) <= value < 2**63:
            kind = "i64"
        elif 2**63 <= value < 2**64:
            kind = "u64"
        else:
            # Triton's own launch refuses it (OverflowError in its specialization).
            raise Unsupported(
                f"argument `{name}` is an int of {value.bit_length()} bits: Triton refuses it "
                "at the launch (integer to be specialized too large to represent)"
            )
        return {"type": kind, "value": value}
    if isinstance(value, float):
        # The JIT types every float fp32 whatever its value; the value is kept (a non-finite one
        # as text) for the report.
        return {"type": "fp32", "value": _scope.plain(value)}
    if type(value).__name__ == "TensorDescriptor":
        return {
            "type": "tensordesc",
            "dtype": dtype_type(value.base.dtype),
            "shape": [int(s) for s in value.shape],
            "strides": [int(s) for s in value.strides],
            "block_shape": [int(s) for s in value.block_shape],
        }
    if hasattr(value, "dtype") and hasattr(value, "storage_offset"):
        device = getattr(value, "device", None)
        if device is not None and device.type not in ("cuda", "hip"):
            raise Unsupported(
                f"argument `{name}` is a {device.type} tensor: Triton needs it on the GPU"
            )
        # A tensor's storage starts where the caching allocator put it (at least 512-byte
        # aligned), so its data pointer is 16-byte aligned exactly when its offset is.
        offset = value.storage_offset() * value.element_size()
        return {"type": "*" + dtype_type(value.dtype), "aligned": offset % 16 == 0}
    if hasattr(value, "data_ptr"):
        raise Unsupported(f"argument `{name}` is a {type(value).__name__}")
    raise Unsupported(f"argument `{name}` is a {type(value).__name__} ({value!r})")


def kernel_info(jit):
    fn = jit.fn
    path = fn.__code__.co_filename
    if not path.startswith("<"):
        path = os.path.abspath(path)
    source = getattr(jit, "src", "") or ""
    name = fn.__name__
    # Module level in its own globals: wherever the module lives (sys.modules or not, __main__,
    # an exec'd namespace).
    module_level = _jit.unwrap(fn.__globals__.get(name))[0] is jit
    return {
        "file": path,
        "function": name,
        "module": fn.__module__ or "",
        "line": fn.__code__.co_firstlineno,
        "digest": hashlib.sha256(source.encode()).hexdigest(),
        "module_level": module_level,
    }


def globals_of(jit):
    """The module-level plain values and constexprs the kernel body names: what Triton's own
    compile reads from its globals, so a compile from the file sees what the host code saw."""
    import triton.language as tl

    fn = jit.fn
    names = set()
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if hasattr(c, "co_names"))
    found = {}
    for name in sorted(names):
        if name not in fn.__globals__:
            continue
        value = fn.__globals__[name]
        if isinstance(value, tl.constexpr):
            value = value.value
        if _wide_int(value, 2**64):
            # For the report only (the scope file carries it exactly): JSON readers take
            # 64-bit ints, and a long one may not even convert to text.
            continue
        if value is None or isinstance(value, (bool, int, float, str)):
            found[name] = value
        elif isinstance(value, tl.dtype):
            try:
                found[name] = constexpr(value)
            except Unsupported:
                continue
    return found


def grid_of(grid, bound):
    if grid is None:
        return None
    if callable(grid):
        grid = grid(bound)
    if isinstance(grid, int):
        grid = (grid,)
    return [int(g) for g in grid]
