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
import sys
import traceback
import warnings

from tilefit import _capture, _emulation, _generated
from tilefit._patches import REGISTRY

#: torch releases (major.minor) whose Inductor this module was run against.
TESTED_TORCH = ("2.11", "2.15")


def _device_interface(module, _recorder, _emulation_):
    cuda = module.CudaInterface
    why = (
        "Inductor's device interface switches devices through the driver: one device, 0"
    )
    REGISTRY.replace(cuda, "exchange_device", staticmethod(lambda device: 0), why)
    REGISTRY.replace(cuda, "maybe_exchange_device", staticmethod(lambda device: 0), why)
    # Bound to the C++ stream query at import; a max-autotune choice's launch asks it.
    REGISTRY.replace(
        cuda,
        "get_raw_stream",
        staticmethod(lambda device=None: 0),
        "a max-autotune choice's launch asks the driver for its stream",
    )


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
                where = _capture._user_frame(_generated.call_site(sys._getframe(1)))
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

    REGISTRY.replace(
        module,
        "_compile_fx_inner",
        compile_fx_inner,
        "a compile that fails under the emulation is recorded where it fails",
    )


def _config(module, _recorder, _emulation_):
    REGISTRY.replace(
        module,
        "use_static_cuda_launcher",
        False,
        "the static launcher loads kernels through the driver",
    )
    REGISTRY.replace(
        module,
        "compile_threads",
        1,
        "compile workers in other processes would not inherit the emulation",
    )
    REGISTRY.replace(
        module,
        "autotune_in_subproc",
        False,
        "max-autotune's choices are judged in this process, which emulates the device",
    )
    # Choosing between a template with its epilogue fused and without runs both on random
    # tensors; under capture the template keeps its epilogue (Inductor's choice without the
    # benchmark), and the timings it would report are stand-ins, not shown.
    # (torch 2.15 renamed it: setting the old name warns there.)
    why = "the template keeps its epilogue: Inductor's choice without the benchmark"
    if hasattr(module, "benchmark_template_fusion"):
        REGISTRY.replace(module, "benchmark_template_fusion", False, why)
    else:
        REGISTRY.replace(module, "benchmark_epilogue_fusion", False, why)
    why = "each selection is judged where it is made: a cached timing would hide its choices"
    REGISTRY.replace(module, "autotune_local_cache", False, why)
    REGISTRY.replace(module, "max_autotune_report_choices_stats", False, why)


def _helpers(module, _recorder, _emulation_):
    REGISTRY.replace(
        module,
        "set_driver_to_gpu",
        lambda: None,
        "Triton's driver is the emulated one already",
    )


def _joint_graph(module, _recorder, _emulation_):
    folder = module.UniformValueConstantFolder
    run = folder.run

    def run_(self, *args, **kwargs):
        # The pass computes one-element stand-ins of the graph's constants on their device,
        # outside any fake mode, to find uniform values; the values are the device's own on the
        # host, so it computes them there.
        with _OnHost():
            return run(self, *args, **kwargs)

    REGISTRY.replace(
        folder,
        "run",
        run_,
        "the pass computes the graph's uniform constants on the host",
    )


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
    REGISTRY.replace(
        module.CoordescTuner,
        "autotune_single_field",
        split,
        "timing a split size needs the device: the heuristic's size is kept",
    )
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
            failed_retry = (
                self._tilefit_retry is not None and _generated.out_of_resources(error)
            )
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
        _generated.record(recorder, emulation, self, args, kwargs)

    REGISTRY.replace(
        tuner, "__init__", __init__, "the configs Inductor chose are kept to be judged"
    )
    REGISTRY.replace(
        tuner,
        "precompile",
        precompile_,
        "a kernel none of whose configs fits is judged at its launch, as on the device",
    )
    REGISTRY.replace(tuner, "run", run, "each launch is recorded and judged, not run")
    scale = getattr(tuner, "_dynamic_scale_rblock", None)
    if scale is not None:
        REGISTRY.replace(
            tuner,
            "_dynamic_scale_rblock",
            _rescaled(scale),
            "the configs the register check adds are judged too",
        )
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

        REGISTRY.replace(
            tuner,
            "compile_by_disabling_pipelining",
            compile_by_disabling_pipelining,
            "the config retried at num_stages=1 is judged beside the one that failed",
        )


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
        with _generated.fake_mode():
            return in_process(cls, choices, *args, **kwargs)

    def benchmark_choices(cls, choices, autotune_args, is_collective=False):
        return _generated.judge_choices(recorder, cls, choices, autotune_args)

    REGISTRY.replace(
        cache,
        "benchmark_in_current_process",
        classmethod(benchmark_in_current_process),
        "a choice's benchmark inputs are FakeTensors",
    )
    REGISTRY.replace(
        cache,
        "benchmark_choices",
        classmethod(benchmark_choices),
        "every choice is judged on the device, never benchmarked",
    )
    REGISTRY.replace(
        cache,
        "log_results",
        staticmethod(lambda *args, **kwargs: None),
        "its table of timings would show the stand-ins as milliseconds",
    )


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
    why = "Dynamo's front door saves and restores the device's random state"
    REGISTRY.replace(cuda, "get_rng_state", rng_state, why)
    REGISTRY.replace(cuda, "set_rng_state", lambda new_state, device="cuda": None, why)
    REGISTRY.replace(cuda, "get_rng_state_all", lambda: [rng_state()], why)
    REGISTRY.replace(cuda, "set_rng_state_all", lambda states: None, why)
    why = "the generated modules switch devices through the driver: one device, 0"
    REGISTRY.replace(cuda, "_exchange_device", lambda device: 0, why)
    REGISTRY.replace(cuda, "_maybe_exchange_device", lambda device: 0, why)
    guards = torch._C._dynamo.guards
    REGISTRY.replace(
        guards,
        "_empty_strided_cuda",
        lambda size, stride, dtype, *args, **kwargs: torch.empty_strided(
            size, stride, dtype=dtype, device="cuda"
        ),
        "the generated modules allocate their buffers through the driver",
    )
    # A view made in C++ from a FakeTensor's storage comes out on the meta device: make it
    # through the dispatcher, as the C++ helper does on a device.
    REGISTRY.replace(
        guards,
        "_reinterpret_tensor",
        lambda tensor, size, stride, offset=0: tensor.as_strided(
            size, stride, tensor.storage_offset() + offset
        ),
        "a view of a FakeTensor's storage made in C++ comes out on the meta device",
    )
    why = "the generated modules ask the driver for the current stream"
    REGISTRY.replace(torch._C, "_cuda_getCurrentRawStream", lambda device: 0, why)
    # Dynamo asks whether a CUDA graph is being captured (torch 2.15's front door): never,
    # under the emulation.
    if hasattr(torch._C, "_cuda_isCurrentStreamCapturing"):
        why = "no CUDA graph is captured under the emulation"
        REGISTRY.replace(torch._C, "_cuda_isCurrentStreamCapturing", lambda: False, why)
        # torch.cuda.graphs took the C++ function by name at import.
        REGISTRY.replace(
            torch.cuda.graphs, "_cuda_isCurrentStreamCapturing", lambda: False, why
        )


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
    REGISTRY.done(
        "warnings.filters",
        "torch's warning about a FakeTensor's data pointer is about tilefit, not the script",
        _unfilter(warnings.filters[0]),
    )
    finder = _Finder(recorder, emulation)
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name], recorder, emulation)
    REGISTRY.insert(
        sys.meta_path,
        0,
        finder,
        "Inductor's modules are patched as they are imported",
        where="sys.meta_path",
    )


def _unfilter(entry):
    """Undo of a warnings filter: ``entry`` removed, and ``warnings`` told its filters changed."""

    def undo():
        with getattr(warnings, "_lock", None) or _NoLock():
            for at, held in enumerate(warnings.filters):
                if held is entry:
                    del warnings.filters[at]
                    break
            for name in ("_filters_mutated_lock_held", "_filters_mutated"):
                mutated = getattr(warnings, name, None)
                if mutated is not None:
                    mutated()
                    return

    return undo


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
