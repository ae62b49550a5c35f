"""``tilefit._scope``: a launched kernel written as a file of its own, with the values its names
had, whatever bound them (a factory's closure, an ``exec``'d namespace, an enum, another jit
function); a name that cannot be carried is named."""

import enum

import pytest
import triton
import triton.language as tl

from tilefit import _scope


class Mode(enum.IntEnum):
    FAST = 1
    EXACT = 2


def _factory(block, mode):
    SCALE = tl.constexpr(3)

    @triton.jit
    def helper(x):
        return x * SCALE

    @triton.jit
    def kernel(ptr, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        x = tl.load(ptr + offsets)
        if MODE == 2:  # noqa: F821 (set in the kernel's globals below)
            x = helper(x)
        tl.store(ptr + offsets, x + WIDTH)  # noqa: F821

    kernel.fn.__globals__.update({"MODE": mode, "WIDTH": tl.constexpr(block)})
    return kernel


def _defined(text, name):
    namespace = {}
    exec(compile(text, "<scope>", "exec"), namespace)
    return namespace[name]


def test_a_factory_kernel_is_written_with_its_closure_and_globals():
    kernel = _factory(64, Mode.EXACT)
    text, digest = _scope.scope_file(kernel)
    again, same = _scope.scope_file(kernel)
    assert (text, digest) == (again, same)
    assert "imports only Triton and the standard library" in text
    written = _defined(text, "kernel")
    assert isinstance(written, triton.runtime.JITFunction)
    assert written.src == kernel.src
    scope = written.fn.__globals__
    assert scope["MODE"] == Mode.EXACT and type(scope["MODE"]).__name__ == "Mode"
    assert scope["WIDTH"] == tl.constexpr(64)
    assert isinstance(scope["helper"], triton.runtime.JITFunction)


def test_another_value_is_another_file():
    fast, _ = _scope.scope_file(_factory(64, Mode.FAST))
    wide, _ = _scope.scope_file(_factory(128, Mode.EXACT))
    exact, _ = _scope.scope_file(_factory(64, Mode.EXACT))
    assert len({fast, wide, exact}) == 3


def test_a_name_that_cannot_be_carried_is_named():
    @triton.jit
    def kernel(ptr):
        tl.store(ptr, HANDLE)  # noqa: F821

    kernel.fn.__globals__["HANDLE"] = object()
    with pytest.raises(_scope.NotCarried, match="HANDLE"):
        _scope.scope_file(kernel)


def test_json_of_non_finite_values_is_any_reader_s():
    assert (
        _scope.dumps({"a": float("-inf"), "b": [1.5]})
        == '{"a": {"float": "-inf"}, "b": [1.5]}'
    )
