"""The one walk from a kernel as user code holds it down to its ``@triton.jit`` function.

``@triton.autotune`` and ``@triton.heuristics`` (and any wrapper that keeps the function as
``.fn``) wrap a ``JITFunction``; the runtime API (``_fit``), the capture (``_capture``, ``_scope``)
and the compile worker (which joins this file into its script) all unwrap through here, so they
cannot disagree on what a kernel is. Only ``triton`` is imported, and only when called.
"""


def is_jit(obj):
    """Whether ``obj`` is a ``@triton.jit`` function."""
    from triton.runtime.jit import JITFunction

    return isinstance(obj, JITFunction)


def unwrap(obj):
    """``(jit, autotune_configs, heuristics)`` of a kernel: the ``JITFunction`` under its wrappers
    (``None`` when there is none), the outermost autotuner's configs (``None`` when not
    autotuned) and each ``@triton.heuristics``' values, outermost first (the order they run in at
    a launch, each seeing what the outer ones set)."""
    autotune_configs = None
    heuristics = []
    while obj is not None and not is_jit(obj) and hasattr(obj, "fn"):
        if autotune_configs is None and hasattr(obj, "configs"):
            autotune_configs = obj.configs
        values = getattr(obj, "values", None)
        if isinstance(values, dict):
            heuristics.append(values)
        obj = obj.fn
    return (obj if is_jit(obj) else None), autotune_configs, heuristics
