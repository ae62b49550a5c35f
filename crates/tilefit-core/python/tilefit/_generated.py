"""Inductor's generated kernels as launches: a ``CachingAutotuner``'s launch recorded with the
configs Inductor chose (with those its register check added, and the config it retried at
``num_stages=1``), a max-autotune selection's Triton choices each judged on the emulated device
(never benchmarked: the first that fits is taken, as Inductor skips one that fails), and the
user's line of a Dynamo-compiled call. :mod:`tilefit._inductor` installs the hooks that call
these.
"""

from __future__ import annotations

import os
import re
import sys

from tilefit import _capture, _state


def out_of_resources(error):
    return type(error).__name__ in ("OutOfResources", "OutOfMemoryError")


#: The max-autotune selections being judged, innermost last: each Triton template choice's launch
#: is one candidate of the selection's group.


#: What Inductor raises where no choice of a selection without an ATen fallback fits (its
#: precompile marks each failed; Python 3.12's threaded precompile path).
_NO_VALID_CHOICES = (
    "NoValidChoicesError: No choices to select. Provided reason: All choices failed to compile "
    "for backend."
)


def fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


def judge_choices(recorder, cls, choices, autotune_args):
    from torch._inductor.select_algorithm import TritonTemplateCaller

    triton = [c for c in choices if isinstance(c, TritonTemplateCaller)]
    # What runs where no Triton choice fits: ATen's kernels, and any other choice Inductor
    # offers (a decomposition, which is its own graph).
    extern = [c for c in choices if not isinstance(c, TritonTemplateCaller)]
    recorder._next_group += 1
    site = call_site(sys._getframe(2))
    keys = sorted(
        {
            str(k)
            for c in triton
            for k in (getattr(c, "log_info", None) or {})
            if str(k) in _CHOICE_KEYS
        }
    )
    selection = {
        "id": recorder._next_group,
        "caller": _capture._user_frame(site),
        "chain": _capture._chain(site),
        "choices": {
            "op": _op(triton[0]) if triton else None,
            "of": len(choices),
            "triton": len(triton),
            "fallback": _fallback(extern),
        },
        "keys": keys,
    }
    timings = {}
    _state.RUN.selections.append(selection)
    recorder._benchmarking += 1
    try:
        for choice in choices:
            timings[choice] = _judge_choice(cls, choice, autotune_args)
    finally:
        recorder._benchmarking -= 1
        _state.RUN.selections.pop()
    fitting = [c for c in triton if timings[c] == _FITS]
    if not fitting and not extern and triton:
        # On the device the compile fails here: the selection's launches say so, and the
        # compile fails as it does there (recorded: not an error of the emulation).
        for record in selection.get("records", []):
            record["inductor"]["no_valid_configs"] = _NO_VALID_CHOICES
        from torch._inductor.select_algorithm import NoValidChoicesError

        error = NoValidChoicesError(_NO_VALID_CHOICES.split(": ", 1)[1])
        error._tilefit_device_failure = True
        raise error
    return timings


#: Stand-in timings that make the selection deterministic: a Triton choice that fits, then the
#: ATen kernel, then anything else Inductor offers (a decomposition, run as its own graph).
_FITS, _ATEN, _OTHER = 1.0, 2.0, 3.0


#: The names a template choice's configuration sets, as its log info names them.
_CHOICE_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_stages", "num_warps")


def _op(choice):
    """A choice's template (``triton_mm`` of ``triton_mm_4``)."""
    name = str(getattr(choice, "name", "") or "")
    head, _, tail = name.rpartition("_")
    return head if tail.isdigit() and head else name or None


def _fallback(extern):
    from torch._inductor.select_algorithm import ExternKernelCaller

    names = [
        ("ATen " if isinstance(c, ExternKernelCaller) else "")
        + str(getattr(c, "name", None) or type(c).__name__)
        for c in extern
    ]
    return ", ".join(names) or None


def _judge_choice(cls, choice, autotune_args):
    from torch._inductor.select_algorithm import (
        ExternKernelCaller,
        TritonTemplateCaller,
    )

    if isinstance(choice, ExternKernelCaller):
        return _ATEN
    if not isinstance(choice, TritonTemplateCaller):
        return _OTHER
    inputs, output = autotune_args.get_benchmark_tensors(False).unpack()
    request = choice.bmreq
    try:
        request.precompile()
    except Exception:  # noqa: BLE001 (a choice that fails its compile is skipped, as on the device)
        return float("inf")
    with fake_mode():
        run = request.make_run_fn(*inputs, out=output)
        selection = _state.RUN.selections[-1]
        selection["choice"] = choice
        selection["autotuner"] = None
        run()
    autotuner = selection["autotuner"]
    if autotuner is None:
        # The choice launched nothing tilefit saw: it is not judged, and not taken.
        return float("inf")
    return float("inf") if autotuner._tilefit_no_valid else _FITS


def _kind(autotuner):
    meta = getattr(autotuner, "inductor_meta", None) or {}
    heuristic = getattr(getattr(autotuner, "heuristic_type", None), "name", None)
    if meta.get("persistent_reduction"):
        return "persistent-reduction"
    return (heuristic or "unknown").lower().replace("_", "-")


#: Dynamo's entry: the user's call of a compiled function or module is above its frames (below
#: them runs the compiled code, whose frames carry the function's own file and first line).
_DYNAMO_ENTRY = os.sep + os.path.join("torch", "_dynamo", "eval_frame.py")


def call_site(frame):
    """The frame to look for the user's call from: the caller of the outermost Dynamo entry on
    the stack, or ``frame`` itself when the launch did not come through one."""
    start, walk = frame, frame
    while walk is not None:
        if walk.f_code.co_filename.endswith(_DYNAMO_ENTRY):
            start = walk.f_back
        walk = walk.f_back
    return start or frame


def record(recorder, emulation, autotuner, args, kwargs):
    """Record one launch of an Inductor kernel: each config it would try, as candidates of one
    group (one config: the fixed launch)."""
    # The configs Inductor halved after the load are tried beside the ones it listed.
    rescaled = {id(config): why for config, why in autotuner._tilefit_rescaled}
    configs = list(autotuner._tilefit_configs) + [
        c for c, _ in autotuner._tilefit_rescaled
    ]
    retry = autotuner._tilefit_retry
    if retry is not None:
        # The config that failed and the one Inductor retried it as: the kernel survives where
        # the retry fits.
        configs.append(retry["config"])
    selection = _state.RUN.selections[-1] if _state.RUN.selections else None
    if selection is not None:
        group = selection
        selection["autotuner"] = autotuner
    else:
        recorder._next_group += 1
        site = call_site(sys._getframe(2))
        group = {
            "id": recorder._next_group,
            "caller": _capture._user_frame(site),
            "chain": _capture._chain(site),
        }
    several = len(configs) > 1 or selection is not None
    recorder._group.append(group)
    start = len(recorder.launches)
    if several:
        recorder._benchmarking += 1
    try:
        for config in configs:
            # What Inductor's compile passes (`_create_compile_options`): the config's warps
            # and stages; num_ctas and maxnreg stay Triton's defaults there.
            options = {"num_warps": config.num_warps, "num_stages": config.num_stages}
            kernel_args, grid = _args_grid(autotuner, args, config)
            _capture.capture_run(
                recorder,
                emulation,
                autotuner.fn,
                kernel_args,
                {**kwargs, **config.kwargs, **options},
                grid,
                False,
            )
    finally:
        if several:
            recorder._benchmarking -= 1
        recorder._group.pop()
    meta = getattr(autotuner, "inductor_meta", None) or {}
    keys = sorted({str(k) for c in configs for k in (c.kwargs or {})})
    for config, record in zip(configs, recorder.launches[start:]):
        if selection is not None:
            # One choice of a max-autotune selection: a candidate among the selection's Triton
            # choices.
            record["autotune"] = {
                "group": group["id"],
                "role": "candidate",
                "configs": selection["choices"]["triton"],
                "tried": selection["choices"]["triton"],
                "keys": selection["keys"],
            }
            selection.setdefault("records", []).append(record)
        elif several:
            record["autotune"] = {
                "group": group["id"],
                "role": "candidate",
                "configs": len(configs),
                "tried": len(configs),
                "keys": keys,
            }
        else:
            # One config (a template's table entry, a heuristic's one choice): a fixed launch.
            record.pop("autotune", None)
        retried = retry is not None and config is retry["config"]
        record["inductor"] = {
            "kernel": meta.get("kernel_name") or autotuner.fn.__name__,
            "kind": _kind(autotuner),
            "source": autotuner.fn.fn.__code__.co_filename,
            "shared": retry["shared"]
            if retried
            else autotuner._tilefit_shared.get(id(config)),
            "no_valid_configs": autotuner._tilefit_no_valid,
            "tiles": _tiles(autotuner.fn),
        }
        if retry is not None:
            record["inductor"]["retry"] = {"num_stages": 1}
        if id(config) in rescaled:
            record["inductor"]["rescaled"] = rescaled[id(config)]
        if selection is not None:
            # A choice's module names its kernel by a placeholder: the choice's own name.
            chosen = selection.get("choice")
            record["inductor"]["kernel"] = (
                getattr(chosen, "name", None) or autotuner.fn.__name__
            )
            record["inductor"]["kind"] = "template-choice"
            record["inductor"]["choices"] = dict(selection["choices"])
            record["inductor"]["choice"] = getattr(chosen, "description", None)


#: A template's tile sizes, as its generated source sets them (constants of the kernel's body,
#: not arguments): ``BLOCK_M : tl.constexpr = 128``.
_TILE = re.compile(r"^\s+(BLOCK_[A-Z0-9_]+)\s*:\s*tl\.constexpr\s*=\s*(\d+)\s*$", re.M)


def _tiles(jit):
    """The tile sizes a generated kernel's source sets in its body (a template's config)."""
    source = getattr(jit, "src", None) or ""
    return {name: int(value) for name, value in _TILE.findall(source)}


def _args_grid(autotuner, args, config):
    """The kernel's own arguments (a template's launch passes its grid after them) and the grid
    Inductor computes for ``config`` (None where it cannot say)."""
    meta = getattr(autotuner, "inductor_meta", None) or {}
    extra = list(meta.get("extra_launcher_args", ()))
    kernel_args = args[: -len(extra)] if extra else args
    try:
        _args, grid = autotuner._interpret_args_grid(args, config)
    except ImportError:
        # Its signature filter imports Triton's interpreter, which needs numpy (not a torch
        # dependency): the same filter, without it.
        grid = _grid_without_interpreter(autotuner, args, config, meta, extra)
    except Exception:  # noqa: BLE001 (a grid Inductor cannot say is not a reason to lose the launch)
        grid = None
    try:
        return kernel_args, None if grid is None else [int(g) for g in grid]
    except (TypeError, ValueError):
        return kernel_args, None


def _grid_without_interpreter(autotuner, args, config, meta, extra):
    from torch._inductor.runtime.triton_heuristics import GridExpr, get_constexprs

    constexprs = set(get_constexprs(autotuner.fn))
    names = [
        name
        for i, name in enumerate(autotuner.triton_meta["signature"])
        if i not in constexprs
    ]
    try:
        expr = GridExpr.from_meta(meta, config, mode=autotuner.grid_mode)
        return expr.eval_slow(dict(zip([*names, *extra], args)))
    except Exception:  # noqa: BLE001 (as above)
        return None
