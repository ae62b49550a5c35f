"""What a capture script uses under ``tilefit capture`` (and a test under
``pytest --tilefit-emulate``): the emulated device, a way to import an engine's module from its
source file when the engine is not installed, and calls that may stop without ending the script.

    from tilefit import emulate

    emulate.stand_in("vllm.platforms", current_platform=emulate.Platform())
    emulate.stand_in("vllm.triton_utils", triton=triton, tl=tl)
    decode = emulate.load_source(PATH, "vllm.v1.attention.ops.triton_decode_attention")

Stand-ins are evaluated in each target's own process, after the emulation is in place, so a
per-backend value an engine reads at import (``is_hip_ = current_platform.is_rocm()``) is the
target's. Outside an emulated run the same script runs for real: :class:`Platform` then answers
for the real device.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import types

from tilefit import _emulation
from tilefit._patches import REGISTRY


def device():
    """The emulated device (the table's values as a dict), or None when not emulating."""
    emulation = _emulation.installed()
    return emulation.device if emulation else None


def active():
    """Whether this process runs under tilefit's emulation."""
    return _emulation.installed() is not None


class Platform:
    """A stand-in for an engine's platform object (vLLM's ``current_platform``): every answer is
    read from torch, so it is the emulated device's under emulation and the real one otherwise."""

    def is_rocm(self):
        import torch

        return torch.version.hip is not None

    def is_cuda(self):
        import torch

        return torch.version.cuda is not None and torch.version.hip is None

    def is_cuda_alike(self):
        return self.is_cuda() or self.is_rocm()

    def is_cpu(self):
        return False

    def is_xpu(self):
        return False

    def get_device_capability(self, device_id=0):
        import torch

        return DeviceCapability(*torch.cuda.get_device_capability(device_id))

    def has_device_capability(self, capability, device_id=0):
        cap = self.get_device_capability(device_id)
        if isinstance(capability, tuple):
            return (cap.major, cap.minor) >= tuple(capability)
        return cap.to_int() >= capability

    def is_device_capability(self, capability, device_id=0):
        cap = self.get_device_capability(device_id)
        if isinstance(capability, tuple):
            return (cap.major, cap.minor) == tuple(capability)
        return cap.to_int() == capability

    def get_device_name(self, device_id=0):
        import torch

        return torch.cuda.get_device_name(device_id)

    def fp8_dtype(self):
        import torch

        return (
            torch.float8_e4m3fnuz
            if self.is_rocm() and self._fnuz()
            else torch.float8_e4m3fn
        )

    def _fnuz(self):
        import torch

        arch = getattr(torch.cuda.get_device_properties(0), "gcnArchName", "")
        return arch.startswith("gfx94")


class DeviceCapability(tuple):
    """``(major, minor)`` with ``.major``, ``.minor``, ``.to_int()`` and ``.as_version_str()``."""

    def __new__(cls, major, minor):
        return super().__new__(cls, (major, minor))

    @property
    def major(self):
        return self[0]

    @property
    def minor(self):
        return self[1]

    def to_int(self):
        return self[0] * 10 + self[1]

    def as_version_str(self):
        return f"{self[0]}.{self[1]}"


def stand_in(name, **attributes):
    """Put a module named ``name`` (and any missing parent packages) in ``sys.modules`` with these
    attributes, for an engine module's imports of a package that is not installed."""
    why = f"the script stands in for `{name}`, which is not installed"
    module = sys.modules.get(name)
    if module is None:
        module = types.ModuleType(name)
        # A package, so stand-ins or the engine's own files can sit below it.
        module.__path__ = []
        REGISTRY.set_item(sys.modules, name, module, why, where="sys.modules")
    for key, value in attributes.items():
        REGISTRY.replace(module, key, value, why)
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        parent_name = ".".join(parts[:i])
        parent = sys.modules.get(parent_name)
        if parent is None:
            parent = types.ModuleType(parent_name)
            parent.__path__ = []
            REGISTRY.set_item(
                sys.modules, parent_name, parent, why, where="sys.modules"
            )
        child = sys.modules[".".join(parts[: i + 1])]
        if not hasattr(parent, parts[i]):
            REGISTRY.replace(parent, parts[i], child, why)
    return module


class _Anything:
    """A stand-in for whatever a package that is not installed would have given: callable (a
    decorator returns what it decorates), indexable, iterable as empty, a base class, falsy."""

    def __init__(self, name="stand-in"):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _Anything(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _Anything(f"{self._name}()")

    def __getitem__(self, key):
        return _Anything(f"{self._name}[...]")

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __mro_entries__(self, bases):
        return (object,)

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __repr__(self):
        return f"<tilefit stand-in {self._name}>"


class _AnythingModule(types.ModuleType):
    """A stood-in module; `from pkg import name` may import `name` as a submodule, so it acts as
    a stand-in value too."""

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _Anything(f"{self.__name__}.{attr}")

    def __call__(self, *args, **kwargs):
        return _Anything(self.__name__)(*args, **kwargs)

    def __bool__(self):
        return False


class _AnythingFinder:
    """Serves any module under the given top-level packages that is not there otherwise."""

    def __init__(self, packages):
        self.packages = set(packages)

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in self.packages:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=True)

    def create_module(self, spec):
        module = _AnythingModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        return None


def stand_in_package(*packages):
    """Let every import under `packages` (`"vllm"`) that nothing else provides succeed, with
    stand-ins for whatever it names: for an engine module whose import-time code only wires up
    things its kernels and config loader do not need. Stand-ins given with :func:`stand_in` win;
    a stand-in is never a real value (it is falsy and returns stand-ins), so give real ones for
    what the code under test reads."""
    REGISTRY.insert(
        sys.meta_path,
        len(sys.meta_path),
        _AnythingFinder(packages),
        f"the script stands in for every import under {', '.join(packages)}",
        where="sys.meta_path",
    )


def load_source(path, name):
    """Import the engine module at ``path`` (its unmodified source file) as ``name``, with its
    parent packages stood in where they are missing: the plain import of the file, with the
    stand-ins given by :func:`stand_in` answering its package imports. Its kernels keep their
    file and line numbers, so captures and compiles point at the real source."""
    parent = name.rpartition(".")[0]
    if parent and parent not in sys.modules:
        stand_in(parent)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"tilefit: cannot load `{path}` as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if parent:
        setattr(sys.modules[parent], name.rpartition(".")[2], module)
    return module


@contextlib.contextmanager
def call(name):
    """One call of the script: under emulation, if the host code needs what emulation lacks
    (``.item()``, a value the table does not have), the call stops there, is recorded with its
    line and reason, and the script goes on. Outside emulation it does nothing."""
    from tilefit import _capture

    recorder = _capture.installed()
    if recorder is None:
        yield
        return
    previous = recorder.current_call
    recorder.begin_call(name)
    try:
        yield
    except Exception as error:
        if _emulation.stop_reason(error) is None:
            raise
        recorder.stop(error, call=name)
    finally:
        recorder.current_call = previous
