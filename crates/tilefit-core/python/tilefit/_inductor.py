"""``torch.compile`` under capture: Inductor's generated kernels recorded per emulated device.

Inductor writes a Triton kernel per fused op, wraps it in a ``CachingAutotuner`` with the configs
its heuristics (or a template's table) chose *for the device it asks about*, compiles each config
for that device's arch, and drops the ones that do not fit (``_init_handles`` against the device's
``max_shared_mem``); with none left it raises ``No valid triton configs``. Under capture every
``CachingAutotuner`` launch is recorded like an autotuned launch: each of its configs is a
candidate, with the launch's own argument values, so tilefit compiles and judges each one for the
target ("k of n fit" apart from "no choice fits"); the bytes Inductor's own compile reported ride
along in each record (``inductor.shared``) as a cross-check.

What torch's internals need to run without a driver is patched as the modules are imported (none
of them is imported by ``import torch``), so a script that never compiles pays nothing:

- ``torch._dynamo.device_interface``: the device guard's exchange answers device 0;
- ``torch._inductor.config``: the static launcher (which ``dlopen``s libcuda) off, compiles in
  this process (a subprocess pool would not inherit the emulation), the cache in the run's scratch;
- ``torch._inductor.runtime.triton_helpers``: ``set_driver_to_gpu`` keeps the emulated driver;
- ``torch._inductor.runtime.triton_heuristics``: ``CachingAutotuner`` keeps its configs, records
  instead of launching, and a kernel with no fitting config is recorded, not raised; a timed
  split size of a mix-order reduction (2.11, ``CoordescTuner``) keeps the heuristic's;
- ``torch._inductor.select_algorithm``: max-autotune's choices are judged, never benchmarked
  (:func:`_select_algorithm`).

Tested with torch 2.11 and 2.15 (``TESTED_TORCH``; another version gets a warning). What differs
is found by what a module has, not by version, so the releases between behave as their code does:

- 2.15 retries a kernel none of whose configs loads at ``num_stages=1``
  (``CachingAutotuner.compile_by_disabling_pipelining``): the retry is judged beside the config
  that failed, and the kernel survives where it fits;
- 2.15 asks whether a CUDA graph is being captured at Dynamo's front door
  (``torch.cuda.graphs._cuda_isCurrentStreamCapturing``): never, under the emulation;
- 2.15 renamed ``benchmark_epilogue_fusion`` to ``benchmark_template_fusion``.
"""

from __future__ import annotations

import copy
import importlib.abc
import os
import re
import sys
import traceback
import warnings

from tilefit import _capture, _emulation

#: torch releases (major.minor) whose Inductor this module was run against.
TESTED_TORCH = ("2.11", "2.15")


def _device_interface(module, _recorder, _emulation_):
    cuda = module.CudaInterface
    cuda.exchange_device = staticmethod(lambda device: 0)
    cuda.maybe_exchange_device = staticmethod(lambda device: 0)
    # Bound to the C++ stream query at import; a max-autotune choice's launch asks it.
    cuda.get_raw_stream = staticmethod(lambda device=None: 0)


def _compile_fx(module, recorder, _emulation_):
    """A compile that fails under the emulation is recorded where it fails: a script that catches
    it (a fallback to eager) must not pass with the graph unjudged."""
    # `compile_fx_inner` is bound as a default argument at import; the function it calls is
    # looked up at each call.
    inner = module._compile_fx_inner

    def compile_fx_inner(*args, **kwargs):
        try:
            return inner(*args, **kwargs)
        except Exception as error:
            # Recorded where it was raised, or the device's own failure that a judged launch
            # records (Inductor wraps a lowering's error: a selection none of whose choices
            # fits).
            known = _capture.marked(
                error, "_tilefit_recorded", "_tilefit_device_failure"
            )
            if _emulation.stop_reason(error) is None and known is None:
                where = _capture._user_frame(_call_site(sys._getframe(1)))
                recorder.errors.append(
                    {
                        "call": recorder.current_call,
                        "error": "torch.compile failed under the emulation, so the graph it "
                        f"compiles is not judged: {type(error).__name__}: {error}",
                        "traceback": traceback.format_exc(limit=-12),
                        "file": where[0] if where else None,
                        "line": where[1] if where else None,
                    }
                )
                error._tilefit_recorded = True
            raise

    module._compile_fx_inner = compile_fx_inner


def _config(module, _recorder, _emulation_):
    module.use_static_cuda_launcher = False
    module.compile_threads = 1
    # max-autotune's choices are judged in this process (a tuning subprocess would not inherit
    # the emulation).
    module.autotune_in_subproc = False
    # Choosing between a template with its epilogue fused and without runs both on random
    # tensors; under capture the template keeps its epilogue (Inductor's choice without the
    # benchmark), and the timings it would report are stand-ins, not shown.
    # (torch 2.15 renamed it: setting the old name warns there.)
    if hasattr(module, "benchmark_template_fusion"):
        module.benchmark_template_fusion = False
    else:
        module.benchmark_epilogue_fusion = False
    # Each selection is judged where it is made: a cached timing would hide its choices.
    module.autotune_local_cache = False
    module.max_autotune_report_choices_stats = False


def _helpers(module, _recorder, _emulation_):
    module.set_driver_to_gpu = lambda: None


def _joint_graph(module, _recorder, _emulation_):
    folder = module.UniformValueConstantFolder
    run = folder.run

    def run_(self, *args, **kwargs):
        # The pass computes one-element stand-ins of the graph's constants on their device,
        # outside any fake mode, to find uniform values; the values are the device's own on the
        # host, so it computes them there.
        with _OnHost():
            return run(self, *args, **kwargs)

    folder.run = run_


def _on_host_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class OnHost(TorchDispatchMode):
        """Tensors the graph makes on the GPU are made on the host instead."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            import torch

            kwargs = dict(kwargs or {})
            device = kwargs.get("device")
            if device is not None and torch.device(device).type != "cpu":
                kwargs["device"] = torch.device("cpu")
            return func(*args, **kwargs)

    return OnHost()


class _OnHost:
    def __enter__(self):
        self._mode = _on_host_mode()
        return self._mode.__enter__()

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)


def _heuristics(module, recorder, emulation):
    # torch 2.11 times a mix-order reduction's split size under max-autotune; timing needs the
    # device, so the heuristic's size (for the device's SM count) is kept and its kernel judged.
    split = staticmethod(lambda _fn, init, *_args, **_kwargs: init)
    module.CoordescTuner.autotune_single_field = split
    tuner = module.CachingAutotuner
    init, precompile = tuner.__init__, tuner.precompile

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        # Inductor drops `configs` once compiled: the list it chose is what gets judged.
        self._tilefit_configs = list(self.configs or [])
        self._tilefit_shared = {}
        self._tilefit_no_valid = None
        self._tilefit_retry = None
        self._tilefit_rescaled = []
        self._tilefit_precompiled = False

    def precompile_(self, *args, **kwargs):
        self._tilefit_precompiled = True
        try:
            precompile(self, *args, **kwargs)
        except Exception as error:
            # On the device, the compile fails here; under capture the kernel's configs are still
            # recorded at its launch (each judged: none fits), and the script goes on.
            failed_retry = self._tilefit_retry is not None and _out_of_resources(error)
            if "No valid triton configs" not in str(error) and not failed_retry:
                raise
            self._tilefit_no_valid = f"{type(error).__name__}: {error}"
            self.launchers = []
        for result in getattr(self, "compile_results", None) or []:
            kernel = getattr(result, "kernel", None)
            shared = getattr(getattr(kernel, "metadata", None), "shared", None)
            if shared is not None:
                self._tilefit_shared[id(result.config)] = shared

    def run(self, *args, stream=None, benchmark_run=False, **kwargs):
        if not self._tilefit_precompiled and not self.launchers:
            # A kernel first loaded at its launch compiles there, as its own run does (torch
            # 2.15's max-autotune loads each choice's module afresh to run it).
            precompile_(self)
        _record(recorder, emulation, self, args, kwargs)

    tuner.__init__ = __init__
    tuner.precompile = precompile_
    tuner.run = run
    scale = getattr(tuner, "_dynamic_scale_rblock", None)
    if scale is not None:
        tuner._dynamic_scale_rblock = _rescaled(scale)
    retry = getattr(tuner, "compile_by_disabling_pipelining", None)
    if retry is not None:
        # Newer torch (2.15) retries a kernel none of whose configs loads at num_stages=1
        # before it gives up: the retried config is judged beside the one that failed.
        def compile_by_disabling_pipelining(self, config, *args, **kwargs):
            for result in self.compile_results or []:
                kernel = getattr(result, "kernel", None)
                shared = getattr(getattr(kernel, "metadata", None), "shared", None)
                if shared is not None:
                    self._tilefit_shared[id(result.config)] = shared
            stand_in = copy.deepcopy(config)
            stand_in.num_stages = 1
            if "NUM_STAGES" in stand_in.kwargs:
                stand_in.kwargs["NUM_STAGES"] = 1
            self._tilefit_retry = {"config": stand_in, "shared": None}
            launcher = retry(self, config, *args, **kwargs)
            for result in self.compile_results or []:
                kernel = getattr(result, "kernel", None)
                self._tilefit_retry["shared"] = getattr(
                    getattr(kernel, "metadata", None), "shared", None
                )
            return launcher

        tuner.compile_by_disabling_pipelining = compile_by_disabling_pipelining


def _rescaled(scale):
    """Inductor's ``_dynamic_scale_rblock``, run as on the device (the emulated load reads each
    config's registers from its cubin), with the configs it adds kept: a reduction config whose
    registers per thread leave fewer resident blocks than its grid needs gets a copy with its R
    blocks halved, compiled and tried beside the others."""

    def _dynamic_scale_rblock(self):
        before = list(self.compile_results or [])
        scale(self)
        for result in (self.compile_results or [])[len(before) :]:
            new = result.config
            # The config it halved: the same but for R blocks twice as large.
            old = next(
                (
                    r
                    for r in before
                    if (r.config.num_warps, r.config.num_stages)
                    == (new.num_warps, new.num_stages)
                    and all(
                        r.config.kwargs.get(k) == (2 * v if k.startswith("R") else v)
                        for k, v in new.kwargs.items()
                    )
                ),
                None,
            )
            why = {"registers": None, "from": {}}
            if old is not None:
                why["registers"] = getattr(old.kernel, "n_regs", None)
                why["from"] = {
                    k: v for k, v in old.config.kwargs.items() if k.startswith("R")
                }
            self._tilefit_rescaled.append((new, why))

    return _dynamic_scale_rblock


def _out_of_resources(error):
    return type(error).__name__ in ("OutOfResources", "OutOfMemoryError")


#: The max-autotune selections being judged, innermost last: each Triton template choice's launch
#: is one candidate of the selection's group.
_SELECTIONS = []

#: What Inductor raises where no choice of a selection without an ATen fallback fits (its
#: precompile marks each failed; Python 3.12's threaded precompile path).
_NO_VALID_CHOICES = (
    "NoValidChoicesError: No choices to select. Provided reason: All choices failed to compile "
    "for backend."
)


def _select_algorithm(module, recorder, emulation):
    """max-autotune: every choice of a selection is judged on the device, never benchmarked.

    Inductor benchmarks each choice on random tensors and keeps the fastest; one that fails its
    compile or launch (OutOfResources) is skipped. Under capture each Triton template choice is
    launched once on FakeTensors (its launch recorded as a candidate of the selection), a choice
    whose compile for the emulated arch left no config is skipped as on the device, and the
    selection takes the first choice that fits (else the ATen kernel, else the first choice, so
    that the script goes on and the rest of its graph is judged)."""
    cache = module.AlgorithmSelectorCache
    in_process = cache.benchmark_in_current_process.__func__

    def benchmark_in_current_process(cls, choices, *args, **kwargs):
        with _fake_mode():
            return in_process(cls, choices, *args, **kwargs)

    def benchmark_choices(cls, choices, autotune_args, is_collective=False):
        return _judge_choices(recorder, cls, choices, autotune_args)

    cache.benchmark_in_current_process = classmethod(benchmark_in_current_process)
    cache.benchmark_choices = classmethod(benchmark_choices)
    # Its table of timings would show the stand-ins as milliseconds.
    cache.log_results = staticmethod(lambda *args, **kwargs: None)


def _fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


def _judge_choices(recorder, cls, choices, autotune_args):
    from torch._inductor.select_algorithm import TritonTemplateCaller

    triton = [c for c in choices if isinstance(c, TritonTemplateCaller)]
    # What runs where no Triton choice fits: ATen's kernels, and any other choice Inductor
    # offers (a decomposition, which is its own graph).
    extern = [c for c in choices if not isinstance(c, TritonTemplateCaller)]
    recorder._next_group += 1
    site = _call_site(sys._getframe(2))
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
    _SELECTIONS.append(selection)
    recorder._benchmarking += 1
    try:
        for choice in choices:
            timings[choice] = _judge_choice(cls, choice, autotune_args)
    finally:
        recorder._benchmarking -= 1
        _SELECTIONS.pop()
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
    with _fake_mode():
        run = request.make_run_fn(*inputs, out=output)
        selection = _SELECTIONS[-1]
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


def _call_site(frame):
    """The frame to look for the user's call from: the caller of the outermost Dynamo entry on
    the stack, or ``frame`` itself when the launch did not come through one."""
    start, walk = frame, frame
    while walk is not None:
        if walk.f_code.co_filename.endswith(_DYNAMO_ENTRY):
            start = walk.f_back
        walk = walk.f_back
    return start or frame


def _record(recorder, emulation, autotuner, args, kwargs):
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
    selection = _SELECTIONS[-1] if _SELECTIONS else None
    if selection is not None:
        group = selection
        selection["autotuner"] = autotuner
    else:
        recorder._next_group += 1
        site = _call_site(sys._getframe(2))
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


#: Module name -> the patch applied once it is imported.
_PATCHES = {
    "torch._dynamo.device_interface": _device_interface,
    "torch._inductor.compile_fx": _compile_fx,
    "torch._inductor.config": _config,
    "torch._inductor.fx_passes.joint_graph": _joint_graph,
    "torch._inductor.runtime.triton_helpers": _helpers,
    "torch._inductor.runtime.triton_heuristics": _heuristics,
    "torch._inductor.select_algorithm": _select_algorithm,
}


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, real, patch):
        self._real = real
        self._patch = patch

    def create_module(self, spec):
        return self._real.create_module(spec)

    def exec_module(self, module):
        self._real.exec_module(module)
        self._patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, recorder, emulation):
        self._recorder = recorder
        self._emulation = emulation

    def find_spec(self, fullname, path, target=None):
        patch = _PATCHES.get(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(
                    spec.loader,
                    lambda m: patch(m, self._recorder, self._emulation),
                )
                return spec
        return None


def _patch_torch_cuda():
    """What Dynamo's front door and the generated modules ask the driver for."""
    import torch

    def rng_state(device="cuda"):
        return torch.zeros(16, dtype=torch.uint8, device="cpu")

    cuda = torch.cuda
    cuda.get_rng_state = rng_state
    cuda.set_rng_state = lambda new_state, device="cuda": None
    cuda.get_rng_state_all = lambda: [rng_state()]
    cuda.set_rng_state_all = lambda states: None
    cuda._exchange_device = lambda device: 0
    cuda._maybe_exchange_device = lambda device: 0
    guards = torch._C._dynamo.guards
    guards._empty_strided_cuda = lambda size, stride, dtype, *args, **kwargs: (
        torch.empty_strided(size, stride, dtype=dtype, device="cuda")
    )
    # A view made in C++ from a FakeTensor's storage comes out on the meta device: make it
    # through the dispatcher, as the C++ helper does on a device.
    guards._reinterpret_tensor = lambda tensor, size, stride, offset=0: (
        tensor.as_strided(size, stride, tensor.storage_offset() + offset)
    )
    torch._C._cuda_getCurrentRawStream = lambda device: 0
    # Dynamo asks whether a CUDA graph is being captured (torch 2.15's front door): never,
    # under the emulation.
    if hasattr(torch._C, "_cuda_isCurrentStreamCapturing"):
        torch._C._cuda_isCurrentStreamCapturing = lambda: False
        # torch.cuda.graphs took the C++ function by name at import.
        torch.cuda.graphs._cuda_isCurrentStreamCapturing = lambda: False


def install(recorder, emulation):
    """Record Inductor's kernels into ``recorder`` under ``emulation``, from the first
    ``torch.compile`` on."""
    import torch

    version = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    if version not in TESTED_TORCH:
        print(
            f"tilefit capture: torch {torch.__version__} is outside the versions its "
            f"torch.compile capture was tested with ({', '.join(TESTED_TORCH)}): Inductor's "
            "kernels may be missed or the script may stop inside torch.compile",
            file=sys.stderr,
        )
    _patch_torch_cuda()
    # Inductor's alignment check reads each input's data pointer: under the emulation that is a
    # FakeTensor's, and torch's warning about it is about tilefit, not the user's code.
    warnings.filterwarnings(
        "ignore",
        message="Accessing the data pointer of FakeTensor",
        category=UserWarning,
    )
    finder = _Finder(recorder, emulation)
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name], recorder, emulation)
    sys.meta_path.insert(0, finder)
