"""Values host code reads from tensors under emulation: computed where the data is known, passed
over where a value check reads them, and assumed, declared, everywhere else.

Tensors under emulation are FakeTensors: shapes without data. Host code still reads values
(``.item()``, ``.tolist()``, ``bool(t)``, ``nonzero``, a mask's sum), for three reasons:

- **To feed a launch or a branch** (``n = (target != ignore).sum().item()``). Where the data is
  known on the host, the value is computed exactly: a FakeTensor carries a *shadow*, the same
  tensor computed on the CPU, when it is small (at most :data:`LIMIT` elements) and every tensor
  it was made from had one: tensors made from Python values (``torch.tensor``), ``arange``,
  ``full``, ``zeros``, the CPU's seeded random numbers, and whatever ops make of them (masks,
  sums, indexing, in-place writes). Every op of the FakeTensor mode runs once more on the shadows
  (torch's own CPU kernels). A kernel launch writes its tensor arguments, and an op with no shadow
  writes its outputs: their shadows are dropped (the storage's data is then unknown). Random
  numbers drawn *on the device* come from the device's generator, which the CPU cannot replay:
  they are drawn from a CPU generator seeded as the script seeded the device's, and a value read
  from them is an assumption (declared, as below), not a computation.
- **To check a result** (``torch.testing.assert_close``, ``torch.allclose``, ``assert`` on a
  tensor, a test helper named ``assert...``, ``numpy.testing``): kernel outputs have no data under
  emulation, so the check passes over (a boolean reads True, a number 0, a ``nonzero`` finds
  nothing) and is recorded as *not checked* at its line; the run goes on to what follows it (a
  test's backward).
- **Anything else** with no data: a declared *assumption* (a boolean True, an integer
  :data:`ASSUMED_INT`, a float 1.0, ``nonzero`` of everything), recorded at its line with the value;
  every launch after it (in the same test or script call) is marked with it.

A read is a check when the statement reading it is an ``assert`` or a call of a function named
``assert...``, or when such a function, or ``torch.testing``/``numpy.testing``/``unittest``, is
on the stack. What is recorded goes to the run's ``on_value`` callbacks (the recorder).
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
import re
import sys
import threading

from tilefit import _state
from tilefit._patches import REGISTRY

#: Elements a shadow holds at most (larger tensors get none: the data is unknown).
LIMIT = 1 << 18

#: Elements a random op on the CPU is drawn for even when no shadow is kept, so the CPU's
#: generator advances as in the real run.
RANDOM_LIMIT = 1 << 24

#: The value an integer read with no data is assumed to have: a multiple of 16 and not 1, as the
#: sizes and counts host code passes to kernels mostly are (so the JIT specializes it the way it
#: specializes them).
ASSUMED_INT = 16

# The run's state (``_state.RUN``): ``on_value`` is called with each value read that is not
# computed, ``(kind, what, value, frame)`` with kind ``"check"`` or ``"assumed"``; ``mode`` is the
# emulation's own FakeTensor mode, the one whose ops are followed (Dynamo and Inductor trace under
# modes of their own, whose data-dependent ops they answer themselves: graph breaks, unbacked
# sizes); ``shadows`` and ``seeds`` are what is known of the values.
_LOCK = threading.RLock()
_OWN = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NOT_USER = ("torch", "triton", "tilefit", "_pytest", "pytest", "pluggy", "runpy")
_CHECK_MODULES = ("torch.testing", "numpy.testing", "unittest")
_CHECK_NAME = re.compile(r"^_?assert", re.IGNORECASE)
_OVERWRITES = {
    "fill_",
    "zero_",
    "copy_",
    "normal_",
    "uniform_",
    "random_",
    "bernoulli_",
    "exponential_",
    "geometric_",
    "cauchy_",
    "log_normal_",
}
#: Ops that read only their tensor inputs' shapes, dtypes and devices, never their data.
_METADATA_ONLY = {
    "zeros_like",
    "ones_like",
    "full_like",
    "rand_like",
    "randn_like",
    "randint_like",
    "new_zeros",
    "new_ones",
    "new_full",
}
_UNINITIALIZED = {
    "empty",
    "empty_strided",
    "empty_like",
    "new_empty",
    "new_empty_strided",
}


class _Shadow:
    """A FakeTensor's data on the CPU, whether it is exact, and if not, why."""

    __slots__ = ("tensor", "exact", "why")

    def __init__(self, tensor, exact, why):
        self.tensor = tensor
        self.exact = exact
        self.why = why


def _key(tensor):
    try:
        return tensor.untyped_storage()._cdata
    except Exception:  # noqa: BLE001 (a tensor with no storage to key: no shadow)
        return None


def _shadow_of(tensor):
    """The valid shadow of ``tensor``, or None."""
    from torch._subclasses.fake_tensor import FakeTensor

    if not isinstance(tensor, FakeTensor):
        if tensor.device.type == "cpu" and tensor.numel() <= LIMIT:
            return _Shadow(tensor, True, None)
        return None
    shadow = tensor.__dict__.get("_tilefit_shadow")
    if shadow is None:
        return None
    key = _key(tensor)
    if key is None or _state.RUN.shadows.get(key) != _key(shadow.tensor):
        return None
    return shadow


def _attach(fake, shadow):
    key = _key(fake)
    if key is None:
        return
    fake.__dict__["_tilefit_shadow"] = shadow
    _state.RUN.shadows[key] = _key(shadow.tensor)


def written(tensor):
    """``tensor``'s storage was written by something the shadows do not follow (a kernel
    launch): its data is unknown from here."""
    key = _key(tensor)
    if key is not None:
        _state.RUN.shadows.pop(key, None)


def _name(func):
    return func._schema.name.split("::")[-1]


def _mutated(func, args, kwargs):
    """The tensors the op writes, and which of them it overwrites whole."""
    import torch

    found = []
    schema = func._schema
    for i, argument in enumerate(schema.arguments):
        info = argument.alias_info
        if info is None or not info.is_write:
            continue
        value = (
            args[i]
            if i < len(args) and not argument.kwarg_only
            else kwargs.get(argument.name)
        )
        if isinstance(value, torch.Tensor):
            whole = argument.kwarg_only or _name(func) in _OVERWRITES
            found.append((value, whole))
    return found


def _to_cpu(value):
    import torch

    if isinstance(value, torch.device) and value.type != "cpu":
        return torch.device("cpu")
    return value


def _random(func):
    import torch

    return torch.Tag.nondeterministic_seeded in func.tags


def _device_of(func, args, kwargs, out):
    import torch
    from torch.utils import _pytree as pytree

    for leaf in pytree.tree_leaves((out, args, kwargs)):
        if isinstance(leaf, torch.Tensor):
            return leaf.device.type
        if isinstance(leaf, torch.device):
            return leaf.type
    return "cpu"


def _on_cpu(func, args, kwargs, out):
    """The op run on the shadows: (the CPU's outputs, exact, why) or None where it cannot be."""
    import torch
    from torch.utils import _pytree as pytree

    overwritten = {id(t) for t, whole in _mutated(func, args, kwargs) if whole}
    metadata_only = _name(func) in _METADATA_ONLY
    exact, why = True, None
    leaves, spec = pytree.tree_flatten((args, kwargs))
    converted = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            shadow = _shadow_of(leaf)
            unread = metadata_only or id(leaf) in overwritten
            if shadow is None and unread and leaf.numel() <= LIMIT:
                # The op never reads its data (a `*_like` factory), or overwrites all of it
                # (`fill_`, `copy_`): any data of its shape stands for it.
                shadow = _Shadow(
                    torch.empty_strided(
                        leaf.shape, leaf.stride(), dtype=leaf.dtype, device="cpu"
                    ),
                    True,
                    None,
                )
                if id(leaf) in overwritten:
                    _attach(leaf, shadow)
            if shadow is None:
                return None
            if not shadow.exact:
                exact, why = False, why or shadow.why
            converted.append(shadow.tensor)
        else:
            converted.append(_to_cpu(leaf))
    cpu_args, cpu_kwargs = pytree.tree_unflatten(converted, spec)
    if _random(func):
        if _device_of(func, args, kwargs, out) != "cpu":
            return _on_device_generator(func, cpu_args, cpu_kwargs)
        if not _state.RUN.seeds["cpu_exact"]:
            exact, why = (
                False,
                why or "the CPU's random numbers after a draw too large to follow",
            )
    return func(*cpu_args, **cpu_kwargs), exact, why


def _on_device_generator(func, args, kwargs):
    """A random op of the device, drawn from the CPU generator that stands in for the device's."""
    import torch

    if _state.RUN.seeds["device"] is None:
        # Never seeded: the device's generator starts from torch's default seed, as a CUDA
        # generator does, so two runs of the script draw the same numbers (and give one report).
        _state.RUN.seeds["device"] = torch.Generator().get_state()
    saved = torch.get_rng_state()
    torch.set_rng_state(_state.RUN.seeds["device"])
    try:
        result = func(*args, **kwargs)
        _state.RUN.seeds["device"] = torch.get_rng_state()
    finally:
        torch.set_rng_state(saved)
    return (
        result,
        False,
        "random numbers drawn on the device (the device's generator draws other numbers than "
        "the CPU's that stands in for it)",
    )


def seed_device(seed):
    """``torch.cuda.manual_seed``: the stand-in for the device's generator starts from ``seed``."""
    import torch

    generator = torch.Generator()
    generator.manual_seed(int(seed))
    _state.RUN.seeds["device"] = generator.get_state()


def _small(values, limit=LIMIT):
    """Whether every tensor among ``values`` has at most ``limit`` elements."""
    import torch
    from torch.utils import _pytree as pytree

    return all(
        leaf.numel() <= limit
        for leaf in pytree.tree_leaves(values)
        if isinstance(leaf, torch.Tensor)
    )


def _follow(func, args, kwargs, out):
    """After the op ran on FakeTensors: run it on the shadows and attach theirs to its outputs;
    the tensors it writes keep a shadow only where the op ran on them."""
    import torch
    from torch.utils import _pytree as pytree

    mutated = _mutated(func, args, kwargs)
    name = _name(func)
    result = None
    has_inputs = any(
        isinstance(leaf, torch.Tensor) for leaf in pytree.tree_leaves((args, kwargs))
    )
    wanted = (
        name not in _UNINITIALIZED
        and (has_inputs or _small(out))
        and _small((args, kwargs, out))
    )
    if (
        _random(func)
        and not has_inputs
        and _device_of(func, args, kwargs, out) == "cpu"
    ):
        # The CPU's generator must advance as in the real run, shadow or not.
        wanted = wanted or _small(out, RANDOM_LIMIT)
    if wanted:
        try:
            result = _on_cpu(func, args, kwargs, out)
        except Exception:  # noqa: BLE001 (an op the CPU cannot run: its outputs have no shadow)
            result = None
    if result is None:
        for tensor, _ in mutated:
            written(tensor)
        if _random(func) and _device_of(func, args, kwargs, out) == "cpu":
            _state.RUN.seeds["cpu_exact"] = False
        return
    cpu_out, exact, why = result
    for tensor, _ in mutated:
        shadow = _shadow_of(tensor)
        if shadow is not None:
            shadow.exact = shadow.exact and exact
            shadow.why = shadow.why or why
            _attach(tensor, shadow)
    fakes = pytree.tree_leaves(out)
    reals = pytree.tree_leaves(cpu_out)
    if len(fakes) != len(reals):
        return
    for fake, real in zip(fakes, reals):
        if (
            isinstance(fake, torch.Tensor)
            and isinstance(real, torch.Tensor)
            and fake.__dict__.get("_tilefit_shadow") is None
            and tuple(fake.shape) == tuple(real.shape)
            and real.numel() <= LIMIT
        ):
            _attach(fake, _Shadow(real, exact, why))


@functools.lru_cache(maxsize=256)
def _statements(filename):
    """(first line, last line, node) of every statement of a file, innermost last."""
    text = "".join(linecache.getlines(filename))
    if not text:
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    return tuple(
        (node.lineno, node.end_lineno or node.lineno, node)
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt)
    )


def _called_name(node):
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _is_check_statement(filename, line):
    """Whether the statement at ``filename:line`` is a check: None if not, else the truth value a
    boolean read there passes with (False under ``assert not ...``)."""
    found = None
    for first, last, node in _statements(filename):
        if first <= line <= last and (
            found is None or (first, -last) >= (found[0], -found[1])
        ):
            found = (first, last, node)
    if found is None:
        return None
    node = found[2]
    if isinstance(node, ast.Assert):
        negated = isinstance(node.test, ast.UnaryOp) and isinstance(
            node.test.op, ast.Not
        )
        return not negated
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and bool(_CHECK_NAME.match(_called_name(node.value)))
    ):
        return True
    return None


def _module(frame):
    return frame.f_globals.get("__name__", "") or ""


def _user(frame):
    filename = frame.f_code.co_filename
    return not (
        _module(frame).split(".")[0] in _NOT_USER or filename.startswith(("<", _OWN))
    )


def in_check(frame):
    """Whether the value read at ``frame`` is a value check's (see the module's doc): None if
    not, else the truth value a boolean read passes the check with."""
    first_user = True
    while frame is not None:
        module = _module(frame)
        if module.startswith(_CHECK_MODULES):
            return True
        if _user(frame):
            if _CHECK_NAME.match(frame.f_code.co_name):
                return True
            if first_user:
                first_user = False
                passing = _is_check_statement(frame.f_code.co_filename, frame.f_lineno)
                if passing is not None:
                    return passing
        frame = frame.f_back
    return None


def _record(kind, what, value):
    frame = sys._getframe(2)
    for callback in _state.RUN.on_value:
        callback(kind, what, value, frame)


def _scalar(tensor, check):
    """The value a read with no data gives: a check's passing value (``check`` is the truth a
    boolean passes with), else the assumption."""
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        return 0.0 if check is not None else 1.0
    if str(tensor.dtype) == "torch.bool":
        return check if check is not None else True
    return 0 if check is not None else ASSUMED_INT


def _fake_like(mode, real, device):
    """A FakeTensor on ``device`` with the shape of ``real`` (a CPU result), carrying it."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    meta = torch.empty_strided(
        real.shape, real.stride(), dtype=real.dtype, device="meta"
    )
    return FakeTensor(mode, meta, torch.device(device))


def data_dependent(mode, func, args, kwargs, error):
    """An op FakeTensors cannot answer (its result, or its output's shape, depends on data):
    computed from the shadows, else passed over in a check, else assumed; or ``error`` raised
    again where none of these applies."""
    import torch
    from torch.utils import _pytree as pytree

    name = _name(func)
    computed = None
    if _small((args, kwargs)):
        try:
            computed = _on_cpu(func, args, kwargs, None)
        except Exception:  # noqa: BLE001 (not computable on the CPU: passed over or assumed below)
            computed = None
    tensors = [
        t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)
    ]
    device = tensors[0].device.type if tensors else "cpu"
    check = in_check(sys._getframe(1))
    if computed is not None:
        result, exact, why = computed
        if not exact and check is not None:
            # A check of data that is assumed (drawn on the device): it takes the value the
            # data gives, and is listed as not checked, not as an assumption later launches
            # depend on.
            _record("check", f"{_what(name)}, of data that is assumed: {why}", None)
        elif not exact:
            _record(
                "assumed",
                f"{_what(name)}, computed from data that is assumed: {why}",
                _plain(result),
            )
        if isinstance(result, torch.Tensor):
            fake = _fake_like(mode, result, device)
            if result.numel() <= LIMIT:
                _attach(fake, _Shadow(result, exact, why))
            return fake
        return result
    kind = "check" if check is not None else "assumed"
    if name == "_local_scalar_dense" and tensors:
        value = _scalar(tensors[0], check)
        _record(kind, _what(name), value)
        return value
    if name in ("equal", "allclose", "is_nonzero", "is_same_size"):
        value = check if check is not None else True
        _record(kind, _what(name), value)
        return value
    if name == "masked_select" and len(tensors) >= 2:
        shape = torch.broadcast_shapes(tensors[0].shape, tensors[1].shape)
        count = 0 if check is not None else int(torch.Size(shape).numel())
        meta = torch.empty((count,), dtype=tensors[0].dtype, device="meta")
        _record(kind, _what(name), f"{count} elements selected")
        return torch._subclasses.fake_tensor.FakeTensor(mode, meta, tensors[0].device)
    if name == "nonzero" and tensors:
        source = tensors[0]
        rows = 0 if check is not None else source.numel()
        meta = torch.empty((rows, source.dim()), dtype=torch.long, device="meta")
        _record(kind, _what(name), f"{rows} of {source.numel()} elements nonzero")
        return torch._subclasses.fake_tensor.FakeTensor(mode, meta, source.device)
    raise error


def _what(name):
    return {
        "_local_scalar_dense": "a tensor's value read on the host (.item(), .tolist(), bool(), int())",
        "nonzero": "nonzero (the output's size depends on the data)",
        "equal": "torch.equal",
        "masked_select": "masked_select (the output's size depends on the data)",
        "allclose": "torch.allclose",
    }.get(name, f"aten.{name} (its result depends on the data)")


def _plain(value):
    import torch

    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {list(value.shape)}"
    return value


def _out_dtype(func, args, kwargs):
    """``aten.addmm.dtype_out(self, mat1, mat2, out_dtype, *, beta, alpha, out)`` and its kin,
    run as the op's default overload and cast to ``out_dtype`` (into ``out``)."""
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    names = [a.name for a in func._schema.arguments]
    values = dict(zip(names, args))
    values.update(kwargs)
    dtype = values.pop("out_dtype")
    values.pop("out", None)
    default = func.overloadpacket.default
    positional = [a.name for a in default._schema.arguments if not a.kwarg_only]
    call_args = [values.pop(n) for n in positional if n in values]
    result = default(*call_args, **values).to(dtype)
    if out is None:
        return result
    out.resize_(result.shape)
    out.copy_(result)
    return out


def _pass_over_assert_close(torch):
    """``torch.testing.assert_close`` of FakeTensors: one check, not checked, at its line."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils import _pytree as pytree

    real = torch.testing.assert_close

    def assert_close(actual, expected, *args, **kwargs):
        if any(
            isinstance(leaf, FakeTensor)
            for leaf in pytree.tree_leaves((actual, expected))
        ):
            _record("check", "torch.testing.assert_close", None)
            return None
        return real(actual, expected, *args, **kwargs)

    assert_close.__doc__ = real.__doc__
    assert_close.__wrapped__ = real
    REGISTRY.replace(
        torch.testing,
        "assert_close",
        assert_close,
        "a check of FakeTensors has no values to compare: recorded as passed over",
    )


def follow(mode):
    """Follow the ops of ``mode``, the emulation's FakeTensor mode (once it exists)."""
    _state.RUN.mode = mode


def install(mode_class):
    """Follow shadows through every op of the FakeTensor mode, and answer its data-dependent ops
    as the module's doc says."""
    import torch

    real = mode_class.dispatch

    def dispatch(self, func, types, args=(), kwargs=None):
        if self is not _state.RUN.mode:
            return real(self, func, types, args, kwargs)
        # One mode serves every thread of the run, and its dispatch keeps state of its own
        # (the kernel-invocation flag, the caches): one op at a time.
        with _LOCK:
            return followed(self, func, types, args, kwargs or {})

    def followed(self, func, types, args, kwargs):
        try:
            out = real(self, func, types, args, kwargs)
        except TypeError:
            # torch's meta kernels of the matmuls' `out_dtype` overloads take `out_dtype` for
            # `beta` (a TypeError under FakeTensor where the device runs them): the op without
            # it, cast.
            if func._overloadname not in ("dtype", "dtype_out"):
                raise
            out = _out_dtype(func, args, kwargs)
        except Exception as error:
            if type(error).__name__ not in (
                "DataDependentOutputException",
                "DynamicOutputShapeException",
            ):
                raise
            return data_dependent(self, func, args, kwargs, error)
        try:
            _follow(func, args, kwargs, out)
        except Exception:  # noqa: BLE001 (following a shadow never changes what the op returns)
            for tensor, _ in _mutated(func, args, kwargs):
                written(tensor)
        return out

    REGISTRY.replace(
        mode_class,
        "dispatch",
        dispatch,
        "each op of the emulation's mode is followed (shadows, data-dependent answers)",
    )
    _pass_over_assert_close(torch)

    def manual_seed(seed):
        seed_device(seed)

    why = "a seed makes the device's random values known to the shadows"
    for name in ("manual_seed", "manual_seed_all"):
        if hasattr(torch.cuda, name):
            REGISTRY.replace(torch.cuda, name, manual_seed, why)
    real_seed = torch.random.manual_seed

    def seeded(seed):
        seed_device(seed)
        _state.RUN.seeds["cpu_exact"] = True
        return real_seed(seed)

    REGISTRY.replace(torch, "manual_seed", seeded, why)
    REGISTRY.replace(torch.random, "manual_seed", seeded, why)
