"""The rule at run time: the first candidate whose compiled kernel fits this device.

Each candidate is compiled by Triton's own JIT (``JITFunction.warmup``, which specializes on the
caller's real arguments exactly as a launch does, and launches nothing). The bytes are the
compiler's ``metadata.shared``; the budget is the driver's per-block opt-in value.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from tilefit import _jit
from tilefit._device import Device, budget_of, current_device
from tilefit._errors import NoConfigFits, NoDevice

_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
_memo = {}
_memo_lock = threading.Lock()


@dataclass(frozen=True)
class Rejection:
    """A candidate that does not fit, and why."""

    #: The candidate as the caller gave it.
    config: Any
    #: Its place in the candidate list.
    index: int
    #: The compiler's shared memory for it; None when it did not compile.
    shared_bytes: int | None
    #: The device's per-block opt-in budget.
    budget: int
    #: The compiler's message when it did not compile.
    error: str | None = None

    @property
    def over_by(self):
        """Bytes over the budget (None when it did not compile)."""
        if self.shared_bytes is None:
            return None
        return self.shared_bytes - self.budget

    def __str__(self):
        if self.shared_bytes is None:
            return f"candidate #{self.index} {_show(self.config)}: did not compile: {self.error}"
        return (
            f"candidate #{self.index} {_show(self.config)}: needs {self.shared_bytes} bytes of "
            f"shared memory, {self.over_by} over the {self.budget}-byte budget"
        )


@dataclass(frozen=True)
class Fit:
    """The candidate chosen for this device."""

    #: The candidate as the caller gave it.
    config: Any
    #: Its place in the candidate list.
    index: int
    #: The compiler's shared memory for it.
    shared_bytes: int
    #: The device's per-block opt-in budget.
    budget: int
    #: The device it was judged on.
    device: Device
    #: The candidates before it, each with its reason.
    rejected: tuple = ()

    def __str__(self):
        head = (
            f"{self.device.name} ({self.device.arch}): candidate #{self.index} "
            f"{_show(self.config)} fits: {self.shared_bytes} of {self.budget} bytes"
        )
        lines = [head]
        lines += [f"  rejected {r}" for r in self.rejected]
        return "\n".join(lines)


def _show(config):
    kwargs, options = _split(config)
    return ", ".join(f"{k}={v}" for k, v in {**kwargs, **options}.items())


def _split(config):
    """A candidate as (kernel keyword arguments, compile options)."""
    if hasattr(config, "kwargs") and hasattr(config, "num_warps"):  # triton.Config
        options = {
            k: getattr(config, k)
            for k in _OPTIONS
            if getattr(config, k, None) is not None
        }
        return dict(config.kwargs), options
    if not isinstance(config, dict):
        raise TypeError(
            f"a candidate is a dict of constexprs and options or a triton.Config, not {type(config).__name__}"
        )
    kwargs = {k: v for k, v in config.items() if k not in _OPTIONS}
    options = {k: v for k, v in config.items() if k in _OPTIONS and v is not None}
    return kwargs, options


def _unwrap(kernel):
    """The JITFunction and the heuristics wrapped around it (outermost first); an autotuner's
    list is dropped (fit's candidates replace it)."""
    jit, _, heuristics = _jit.unwrap(kernel)
    if jit is None:
        raise TypeError(
            f"tilefit.fit takes a @triton.jit kernel, not {type(kernel).__name__}"
        )
    return jit, heuristics


def _int_class(value):
    if -(2**31) <= value < 2**31:
        width = "i32"
    elif -(2**63) <= value < 2**63:
        width = "i64"
    else:
        width = "u64"
    return ("int", width, value == 1, value % 16 == 0)


def _spec_key(jit, named):
    """What Triton's JIT specializes on, per argument: the memo key's specialization part."""
    constexprs = {
        p.name for p in getattr(jit, "params", []) if getattr(p, "is_constexpr", False)
    }
    key = []
    for name, value in sorted(named.items()):
        if name in constexprs:
            key.append((name, "constexpr", repr(value)))
        elif hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            key.append((name, "tensor", str(value.dtype), value.data_ptr() % 16 == 0))
        elif isinstance(value, bool):
            key.append((name, "bool", value))
        elif isinstance(value, int):
            key.append((name,) + _int_class(value))
        elif isinstance(value, float):
            key.append((name, "float"))
        elif value is None:
            key.append((name, None))
        else:
            key.append((name, type(value).__name__, repr(value)))
    return tuple(key)


def _compile_bytes(jit, heuristics, args, kwargs, config, grid):
    """Compile one candidate with the caller's arguments; its shared bytes or the error."""
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources

    cand_kwargs, options = _split(config)
    call = {**kwargs, **cand_kwargs}
    named = dict(zip(jit.arg_names, args))
    named.update(call)
    for values in reversed(heuristics):
        for name, rule in values.items():
            if name not in named:
                named[name] = call[name] = rule(named)
    try:
        compiled = jit.warmup(*args, grid=grid, **call, **options)
    except OutOfResources as e:
        if getattr(e, "name", "") == "shared memory":
            return int(e.required), None
        return None, str(e)
    except CompilationError as e:
        return None, str(e).strip().splitlines()[-1]
    return int(compiled.metadata.shared), None


def fit(kernel, candidates, *args, **kwargs):
    """The first of ``candidates`` (dicts of constexprs plus ``num_warps``/``num_stages``, or
    ``triton.Config``) whose compiled kernel fits the current device's per-block opt-in budget.

    ``args``/``kwargs`` are the launch's real arguments. Returns a :class:`Fit`, whose
    ``rejected`` says why each earlier candidate was passed over; raises :class:`NoConfigFits`
    when none fits. Results are memoized per (kernel, device, specialization, candidate)."""
    candidates = list(candidates)
    if not candidates:
        raise ValueError("tilefit.fit needs at least one candidate config")
    grid = kwargs.pop("grid", (1,))
    jit, heuristics = _unwrap(kernel)
    try:
        device = current_device()
    except NoDevice as e:
        raise NoDevice(
            f"tilefit.fit compiles for the device the code runs on, and there is none here ({e}). "
            "Offline, export the choices with `tilefit probe --emit-configs fix.json` and ask "
            'tilefit.load("fix.json").config_for(device="sm_120")'
        ) from e
    budget = budget_of(device)
    named = dict(zip(jit.arg_names, args))
    named.update(kwargs)
    spec = _spec_key(jit, named)
    rejected = []
    for index, config in enumerate(candidates):
        cand_kwargs, options = _split(config)
        key = (
            id(jit),
            getattr(jit, "cache_key", None),
            device.index,
            device.arch,
            spec,
            tuple(sorted((k, repr(v)) for k, v in {**cand_kwargs, **options}.items())),
        )
        with _memo_lock:
            known = _memo.get(key)
        if known is None:
            known = _compile_bytes(jit, heuristics, args, kwargs, config, grid)
            with _memo_lock:
                _memo[key] = known
        shared, error = known
        if shared is not None and shared <= budget:
            return Fit(config, index, shared, budget, device, tuple(rejected))
        rejected.append(Rejection(config, index, shared, budget, error))
    raise NoConfigFits(
        f"no candidate of {getattr(jit, '__name__', 'the kernel')} fits {device.name} "
        f"({device.arch}, {budget} bytes per block):\n"
        + "\n".join(f"  {r}" for r in rejected),
        rejected,
    )
