"""Device emulation: one Python process made to look as if it ran on a target of tilefit's device
table, on a machine with no GPU (``tilefit capture``, ``pytest --tilefit-emulate``).

:func:`install` must run before the user's code is imported, so a module-level
``CUDA_CAPABILITY = torch.cuda.get_device_capability()`` sees the emulated device.

- **torch.** ``torch.cuda``'s device queries answer for the target to every caller outside torch
  itself (torch's own internals keep the real answers, so they never try to reach a driver).
  Tensors are torch's ``FakeTensor``: on ``"cuda"`` with shapes, strides, views and dtypes, and no
  storage. ``torch.version.cuda`` and ``torch.version.hip`` are set per backend.
- **Triton.** The active driver is :class:`EmulatedDriver`: its target, device, stream and
  ``utils.get_device_properties()`` (``max_shared_mem`` is the opt-in budget) answer for the
  target.
- **Values come from the table.** A property the table lacks raises :class:`EmulationGap`, naming
  the value; nothing is invented.
"""

from __future__ import annotations

import sys
import threading
from typing import ClassVar

from tilefit import _cubin, _state, _values
from tilefit._patches import REGISTRY


def installed():
    """This process's :class:`Emulation`, or None when it is not emulating."""
    return _state.RUN.emulation


#: What ``torch.version.hip`` reads under a HIP target: HIP's version is not a property of the
#: device, so it is not given as one; code that only asks whether it is set works.
HIP_VERSION = "tilefit-emulated"


def stopped_here(error):
    """Tell the recorder that ``error`` stops the host code here, before it is raised."""
    for callback in _state.RUN.on_stop:
        callback(error)


class EmulationGap(RuntimeError):
    """Host code asked for a device value tilefit's table does not have."""

    def __init__(self, what):
        self.what = what
        emulation = installed()
        name = emulation.device.get("key") if emulation else None
        name = name or "the emulated device"
        super().__init__(
            f"tilefit's device table has no {what} for {name}: the emulation does not invent one "
            "(give it in the script, or add it to the table with its source)"
        )
        stopped_here(self)


class EmulationGapAttribute(EmulationGap, AttributeError):
    """A device property the table lacks, read as an attribute: also an ``AttributeError``, so
    ``hasattr(props, "L2_cache_size")`` is False and host code takes its own fallback, as on a
    torch build without that property (the gap is still recorded where it was asked)."""


class _Properties:
    """``torch.cuda.get_device_properties()`` for the emulated device: the table's values; a
    field it lacks raises :class:`EmulationGap` when read."""

    _FIELDS: ClassVar[dict] = {
        "name": ("name", "the name the device reports"),
        "major": ("major", "compute capability"),
        "minor": ("minor", "compute capability"),
        "multi_processor_count": ("multiprocessor_count", "multiprocessor count"),
        "warp_size": ("warp_size", "warp size"),
        "shared_memory_per_block_optin": (
            "smem_per_block_optin",
            "opt-in shared memory per block",
        ),
        "shared_memory_per_multiprocessor": (
            "smem_per_sm",
            "shared memory per multiprocessor",
        ),
        "shared_memory_per_block": (
            "smem_per_block_default",
            "default shared memory per block",
        ),
        "regs_per_multiprocessor": ("regs_per_sm", "registers per multiprocessor"),
        "max_threads_per_multi_processor": (
            "max_threads_per_sm",
            "threads per multiprocessor",
        ),
        "max_threads_per_block": ("max_threads_per_block", "threads per block"),
        "total_memory": (None, "total memory"),
        "L2_cache_size": (None, "L2 cache size"),
        "uuid": (None, "UUID"),
        "pci_bus_id": (None, "PCI bus id"),
        "clock_rate": (None, "clock rate"),
        "memory_clock_rate": (None, "memory clock rate"),
        "memory_bus_width": (None, "memory bus width"),
    }

    def __init__(self, device):
        self._device = device

    def __getattr__(self, attr):
        if attr == "gcnArchName":
            if self._device["backend"] != "hip":
                raise AttributeError(attr)
            return self._device["arch"]
        if attr in ("is_integrated", "is_multi_gpu_board"):
            raise EmulationGapAttribute(attr.replace("_", " "))
        field = self._FIELDS.get(attr)
        if field is None:
            raise AttributeError(
                f"'_CudaDeviceProperties' object has no attribute '{attr}'"
            )
        key, what = field
        value = self._device.get(key) if key else None
        if value is None:
            raise EmulationGapAttribute(what)
        return value

    def __repr__(self):
        d = self._device
        return (
            f"_CudaDeviceProperties(name={d.get('name')!r}, major={d['major']}, minor={d['minor']}, "
            f"multi_processor_count={d.get('multiprocessor_count')}, emulated=True)"
        )


class _Stream:
    """A stream with handle 0: host code that passes ``stream.cuda_stream`` on gets a value."""

    cuda_stream = 0
    device = None

    def synchronize(self):
        return None

    def wait_stream(self, _other):
        return None

    def wait_event(self, _event):
        return None

    def record_event(self, event=None):
        return event or _Event()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Event:
    def __init__(self, *args, **kwargs):
        pass

    def record(self, *args, **kwargs):
        return None

    def synchronize(self):
        return None

    def wait(self, *args, **kwargs):
        return None

    def query(self):
        return True

    def elapsed_time(self, _other):
        raise EmulationGap("timing (no kernel runs under emulation)")


class _DeviceContext:
    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


#: Parts of torch that act for the device they ask about: the compilers that choose kernels for it
#: (Dynamo and Inductor) and autocast (which turns itself off where CUDA is not available). They
#: get the emulated answers, as the user's code does.
_EMULATED_FOR = ("torch._dynamo", "torch._inductor", "torch.amp", "torch.cuda.amp")


def _from_torch():
    """Whether the caller of the patched function is torch itself (which keeps the real answer),
    apart from the compilers that choose kernels for the device."""
    frame = sys._getframe(2)
    name = frame.f_globals.get("__name__", "") if frame else ""
    if name.startswith(_EMULATED_FOR):
        return False
    return name == "torch" or name.startswith("torch.")


def _caller_aware(real, emulated):
    def patched(*args, **kwargs):
        if _from_torch():
            return real(*args, **kwargs)
        return emulated(*args, **kwargs)

    patched.__name__ = getattr(real, "__name__", "patched")
    patched.__doc__ = f"tilefit emulation of torch.cuda.{patched.__name__}"
    patched.__wrapped__ = real
    return patched


def _patch_torch(device):
    import torch
    import torch.cuda
    from torch._subclasses.fake_tensor import FakeTensorMode

    props = _Properties(device)
    cuda = torch.cuda
    emulated = {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "is_initialized": lambda: True,
        "get_device_capability": lambda device=None: (device_major(), device_minor()),
        "get_device_name": lambda device=None: props.name,
        "get_device_properties": lambda device=None: props,
        "set_device": lambda device: None,
        "synchronize": lambda device=None: None,
        "current_stream": lambda device=None: _Stream(),
        "default_stream": lambda device=None: _Stream(),
        "get_arch_list": lambda: [device["arch"]],
        "mem_get_info": lambda device=None: (_ for _ in ()).throw(
            EmulationGap("free and total memory")
        ),
        "empty_cache": lambda: None,
    }

    def device_major():
        return props.major

    def device_minor():
        return props.minor

    why = "the device query answers for the emulated device (torch's own callers keep the real one)"
    for name, fake in emulated.items():
        real = getattr(cuda, name, None)
        REGISTRY.replace(
            cuda, name, fake if real is None else _caller_aware(real, fake), why
        )
    why = "no stream, event or device switch exists without a GPU: stand-ins that do nothing"
    REGISTRY.replace(cuda, "Stream", _Stream, why)
    REGISTRY.replace(cuda, "Event", _Event, why)
    REGISTRY.replace(cuda, "stream", _DeviceContext, why)
    REGISTRY.replace(cuda, "device", _DeviceContext, why)
    why = "host code asks torch.version which backend it runs on"
    if device["backend"] == "hip":
        REGISTRY.replace(torch.version, "hip", HIP_VERSION, why)
        REGISTRY.replace(torch.version, "cuda", None, why)
    else:
        REGISTRY.replace(torch.version, "hip", None, why)
        if torch.version.cuda is None:
            REGISTRY.replace(torch.version, "cuda", HIP_VERSION, why)
    _values.install(FakeTensorMode)
    _record_stops_at_dispatch(FakeTensorMode)
    _swap_fake_parameters(torch)
    _patch_dtype_support(torch, device)
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    _values.follow(mode)
    REGISTRY.enter(
        mode,
        "tensors are FakeTensors: shapes, strides and dtypes without storage",
        where="FakeTensorMode",
    )
    return mode


class _NoWeakrefs:
    """``weakref`` as ``swap_tensors`` sees it for FakeTensors: none in the way."""

    @staticmethod
    def getweakrefs(_obj):
        return []


def _swap_fake_parameters(torch):
    """``model.to("cuda")``: torch moves a FakeTensor parameter by ``swap_tensors``, which refuses
    a tensor that a weak reference points at, and FakeTensor's own caches hold one to every fake
    tensor. Under emulation the swap of FakeTensors goes ahead (the caches hold metadata only)."""
    from torch._subclasses.fake_tensor import FakeTensor

    real = torch.utils.swap_tensors

    def swap_tensors(t1, t2):
        if not (isinstance(t1, FakeTensor) or isinstance(t2, FakeTensor)):
            return real(t1, t2)
        names = real.__globals__
        saved = names["weakref"]
        names["weakref"] = _NoWeakrefs
        try:
            return real(t1, t2)
        finally:
            names["weakref"] = saved

    swap_tensors.__doc__ = real.__doc__
    REGISTRY.replace(
        torch.utils,
        "swap_tensors",
        swap_tensors,
        "model.to('cuda') swaps FakeTensor parameters that FakeTensor's caches point at",
    )


def _patch_dtype_support(torch, device):
    """``torch.cuda.is_bf16_supported()`` and ``is_tf32_supported()`` as on the device: torch's
    own answers read the driver (through calls the caller-aware patches hand the real answer)."""
    cuda = device["backend"] == "cuda"
    major = device["major"]

    def is_bf16_supported(including_emulation=True):
        # ROCm: every arch; CUDA: natively from sm_80, and emulated on any device.
        return (not cuda) or major >= 8 or bool(including_emulation)

    def is_tf32_supported():
        if not cuda:
            return any(arch in device["arch"] for arch in ("gfx94", "gfx95"))
        return major >= 8

    why = "torch's own answer reads the driver"
    REGISTRY.replace(torch.cuda, "is_bf16_supported", is_bf16_supported, why)
    if hasattr(torch.cuda, "is_tf32_supported"):
        REGISTRY.replace(torch.cuda, "is_tf32_supported", is_tf32_supported, why)


#: The FakeTensor exceptions that mean the host code needs real data.
_STOPS = (
    "DataDependentOutputException",
    "DynamicOutputShapeException",
    "UnsupportedOperatorException",
)


def _record_stops_at_dispatch(mode_class):
    """A FakeTensor op that needs real data (``.item()``, a data-dependent shape) is recorded as
    it raises, so a script's ``try/except`` cannot hide it."""
    real = mode_class.dispatch

    def dispatch(self, func, types, args=(), kwargs=None):
        try:
            return real(self, func, types, args, kwargs)
        except Exception as error:
            if type(error).__name__ in _STOPS:
                stopped_here(error)
            raise

    REGISTRY.replace(
        mode_class,
        "dispatch",
        dispatch,
        "an op that needs real data is recorded where it raises (a try/except cannot hide it)",
    )


class _DeviceUtils:
    """``driver.active.utils``: the table's values for Triton's device queries."""

    def __init__(self, device):
        self._device = device

    def get_device_properties(self, _device=0):
        d = self._device
        values = {
            "max_shared_mem": d["smem_per_block_optin"],
            "multiprocessor_count": d.get("multiprocessor_count"),
            "max_num_regs": d.get("regs_per_block"),
            "warpSize": d["warp_size"],
        }
        return _TableDict(
            values,
            {
                "sm_clock_rate": "SM clock rate",
                "mem_clock_rate": "memory clock rate",
                "mem_bus_width": "memory bus width",
            },
        )

    def load_binary(self, name, kernel, _shared, _device):
        """A compiled kernel's load: nothing is loaded, and nothing judged here. The shared-memory
        check against the device's budget has run (``CompiledKernel._init_handles``, before the
        load). On NVIDIA the registers per thread and the local memory (``n_spills``: bytes / 4,
        as Triton's driver divides ``CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES``) are read from the
        cubin the way the driver reads them, because Inductor's reductions halve their R blocks
        from the register count. On AMD they are unknown (None: Inductor then keeps its
        configs). The thread limit is the device's block size at most; the register-bound limit
        comes from tilefit's own compile of the launch (``--resources full``)."""
        threads = self._device.get("max_threads_per_block")
        if threads is None:
            raise EmulationGap("the device's threads per block")
        if self._device["backend"] != "cuda":
            return None, None, None, None, threads
        registers, local_bytes = _cubin.load_attributes(kernel, name)
        return None, None, registers, local_bytes // 4, threads


class _NoLaunch:
    """A compiled kernel's launcher under emulation: a call is a gap, never a silent no-op."""

    def __init__(self, _src, metadata):
        self.metadata = metadata

    def __call__(self, *args, **kwargs):
        raise EmulationGap(
            "a launch of an already compiled kernel (`CompiledKernel.run`)"
        )


class _TableDict(dict):
    """A dict whose missing table values raise :class:`EmulationGap` when read."""

    def __init__(self, values, lacking):
        present = {k: v for k, v in values.items() if v is not None}
        super().__init__(present)
        self._lacking = {
            **{k: k.replace("_", " ") for k, v in values.items() if v is None},
            **lacking,
        }

    def __missing__(self, key):
        if key in self._lacking:
            raise EmulationGap(self._lacking[key])
        raise KeyError(key)


class EmulatedDriver:
    """Triton's active driver under emulation: the target of the table, device 0, stream 0. Launches
    never reach it (``tilefit``'s capture records them first)."""

    def __init__(self, emulation):
        from triton.backends.compiler import GPUTarget

        self.emulation = emulation
        device = emulation.device
        self.device = device
        self.backend = device["backend"]
        if self.backend == "hip":
            self._target = GPUTarget("hip", device["arch"], device["warp_size"])
        else:
            self._target = GPUTarget(
                "cuda", device["major"] * 10 + device["minor"], device["warp_size"]
            )
        self.utils = _DeviceUtils(device)
        self.launcher_cls = _NoLaunch

    def is_active(self):
        return True

    def get_current_target(self):
        return self._target

    def get_current_device(self):
        return 0

    def set_current_device(self, _device):
        return None

    def get_current_stream(self, _device=None):
        return 0

    def get_device_capability(self, _device=0):
        return (self.device["major"], self.device["minor"])

    def get_active_torch_device(self):
        import torch

        return torch.device("cuda", 0)

    def get_device_interface(self):
        import torch

        return torch.cuda

    def get_benchmarker(self):
        return self.emulation.fake_benchmark

    def get_empty_cache_for_benchmark(self):
        import torch

        return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")

    def clear_cache(self, cache):
        cache.zero_()

    def map_python_to_cpp_type(self, ty):
        return ty


class Emulation:
    """One process's emulated run: the device it answers as (the dict of the table's values that
    ``tilefit capture`` passes), and how deep it is inside a benchmark call (launches made there
    are configs an autotuner tries, not launches the engine makes). :func:`install` makes it and
    hands it to every patch it installs."""

    def __init__(self, device):
        self.device = dict(device)
        self._local = threading.local()
        #: The FakeTensor mode every thread of the process enters.
        self.mode = None

    @property
    def benchmarking(self):
        """How deep this thread is inside a benchmark call (per thread: another thread's launches
        are not the benchmark's)."""
        return getattr(self._local, "benchmarking", 0)

    @benchmarking.setter
    def benchmarking(self, value):
        self._local.benchmarking = value

    def fake_benchmark(self, kernel_call, quantiles=None, **_kwargs):
        """Run the call once (a launch tilefit records, not runs) and report a time of zero."""
        self.benchmarking += 1
        try:
            kernel_call()
        finally:
            self.benchmarking -= 1
        if quantiles is not None:
            return [0.0 for _ in quantiles]
        return 0.0


def _patch_triton(emulation):
    import triton
    import triton.testing
    from triton.runtime import driver

    why = "Triton's driver answers for the emulated target"
    if "_active" in vars(driver):
        # The driver set, not read through `active` (which would make one for this machine).
        REGISTRY.replace(driver, "_active", EmulatedDriver(emulation), why)
    else:
        driver.set_active(EmulatedDriver(emulation))
        REGISTRY.done("triton.runtime.driver.active", why, driver.reset_active)
    why = "no kernel runs under emulation: a benchmark's timing is a stand-in"
    REGISTRY.replace(triton.testing, "do_bench", emulation.fake_benchmark, why)
    if hasattr(triton.testing, "do_bench_cudagraph"):
        REGISTRY.replace(
            triton.testing, "do_bench_cudagraph", emulation.fake_benchmark, why
        )


def install(device):
    """Make this process look as if it ran on ``device`` (a dict of the table's values), and
    return the :class:`Emulation` its patches share. Call it once, before any user module is
    imported; again with the same device, it returns the same emulation."""
    installed_ = _state.RUN.emulation
    if installed_ is not None:
        if installed_.device != device:
            raise RuntimeError(
                "tilefit's emulation is already installed for another device: use one "
                "process per target"
            )
        return installed_
    emulation = _state.begin().emulation = Emulation(device)
    emulation.mode = _patch_torch(emulation.device)
    _patch_triton(emulation)
    from tilefit import _autograd

    _autograd.install()
    return emulation


def stop_reason(error):
    """Why an exception means the host code needs what emulation does not have (real data, a
    value the table lacks, a custom op with no shape function); None for any other error."""
    name = type(error).__name__
    text = str(error)
    if isinstance(error, EmulationGap):
        return str(error)
    if name == "DataDependentOutputException" or "_local_scalar_dense" in text:
        return "needs a tensor's values on the host (.item(), .tolist(), a Python bool of a tensor)"
    if name == "DynamicOutputShapeException":
        return f"needs real data for an output's shape ({text})"
    if name == "UnsupportedOperatorException":
        return (
            f"calls an op with no shape function ({text}): give the script a stand-in for it "
            "that only produces shapes"
        )
    if isinstance(error, AssertionError):
        # The script's own check (its message may well print a FakeTensor): a script error.
        return None
    if (
        "doesn't have storage" in text
        or "FakeTensor" in text
        or "fake tensor" in text.lower()
    ):
        return f"needs real data: {text.splitlines()[0] if text else name}"
    if name in ("NotImplementedError",) and "numpy" in text.lower():
        return f"needs real data: {text}"
    return None
