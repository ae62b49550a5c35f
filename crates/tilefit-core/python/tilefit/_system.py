"""The system's own view of the emulated GPU: ``nvidia-smi``, ``rocm-smi`` and ``amd-smi`` as
stand-ins first on the script's ``PATH``, and NVML (``pynvml``, ``nvidia-ml-py``, vendored copies)
and ``amdsmi`` answering for the emulated device where the script's environment has them.

Host code often finds its GPU without torch: FlagGems runs each vendor's tool and keeps the one
that answers, vLLM's CUDA platform names devices through NVML. Each answers from tilefit's device
table; a value the table lacks (total memory, UUID, driver version) is named on stderr (the tools)
or raised as :class:`tilefit._emulation.EmulationGap` (the libraries), never invented. Under a
CUDA target the AMD tools answer as on a machine without an AMD GPU, and the reverse.

    python -m tilefit._system TOOL DEVICE.json ARGS...   (what the stand-in scripts run)
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import stat
import sys

from tilefit._patches import REGISTRY

#: The tools stood in, by backend.
TOOLS = {"cuda": ("nvidia-smi",), "hip": ("rocm-smi", "amd-smi")}


#: The variable naming the stand-ins' folder (a child's ``subprocess`` call that names a real
#: tool by its path runs the stand-in instead).
ENV_TOOLS = "TILEFIT_CAPTURE_TOOLS"

#: Every tool stood in.
STOOD_IN = ("nvidia-smi", "rocm-smi", "amd-smi")


class StandInError(Exception):
    """The stand-in tools cannot run where they were written: the script would reach the real
    ones after them on ``PATH``, and see the machine's GPU."""


def write_tools(device, folder, device_file):
    """Write the stand-in tools into ``folder`` and put it first on this process's ``PATH`` (so
    every subprocess the script starts finds them before any real one). Each is a ``/bin/sh``
    script that starts this interpreter by its quoted path (a ``#!`` line would break on a path
    with a space, one longer than the kernel reads, or an interpreter on a ``noexec`` mount); each
    is checked to be runnable, and :class:`StandInError` says why not."""
    import shlex

    os.makedirs(folder, exist_ok=True)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for tool in STOOD_IN:
        path = os.path.join(folder, tool)
        code = (
            f"import sys; sys.path.insert(0, {package_root!r}); "
            "from tilefit._system import main; "
            f"sys.exit(main({tool!r}, {device_file!r}, sys.argv[1:]))"
        )
        with open(path, "w", encoding="utf-8") as out:
            out.write(
                "#!/bin/sh\n"
                f'exec {shlex.quote(sys.executable)} -I -c {shlex.quote(code)} "$@"\n'
            )
        os.chmod(
            path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
        )
        if not os.access(path, os.X_OK):
            raise StandInError(
                f"tilefit's stand-in `{path}` cannot be run (its folder is on a noexec mount?): "
                "the script would find the machine's real tool after it and see the real GPU; "
                "point TILEFIT_CACHE_DIR at a folder on a mount that allows running programs"
            )
    why = "the vendor tools' stand-ins come first on PATH"
    path = folder + os.pathsep + os.environ.get("PATH", "")
    REGISTRY.set_item(os.environ, "PATH", path, why, where="os.environ")
    REGISTRY.set_item(os.environ, ENV_TOOLS, folder, why, where="os.environ")


def stand_in_for(program):
    """The stand-in to run for ``program`` when it names a stood-in tool by a path (the real
    ``/usr/bin/nvidia-smi``), else None."""
    folder = os.environ.get(ENV_TOOLS)
    if not folder or not isinstance(program, (str, bytes, os.PathLike)):
        return None
    name = os.path.basename(os.fsdecode(os.fspath(program)))
    if name not in STOOD_IN:
        return None
    return os.path.join(folder, name)


def to_stand_in(args, kwargs):
    """``subprocess`` arguments with a stood-in tool named by its path (``/usr/bin/nvidia-smi``)
    run as the stand-in: under emulation the real tool is not reachable."""
    if kwargs.get("shell"):
        return args, kwargs
    executable = kwargs.get("executable")
    if executable is not None and stand_in_for(executable):
        kwargs = {**kwargs, "executable": stand_in_for(executable)}
    if isinstance(args, (str, bytes, os.PathLike)):
        return stand_in_for(args) or args, kwargs
    try:
        first, rest = args[0], list(args[1:])
    except (TypeError, IndexError, KeyError):
        return args, kwargs
    stand_in = stand_in_for(first)
    return ([stand_in, *rest] if stand_in else args), kwargs


def _gap(device, what, tool):
    print(
        f"{tool} (tilefit's stand-in): tilefit's device table has no {what} for "
        f"{device.get('key')}: the emulation does not invent one",
        file=sys.stderr,
    )
    events = os.environ.get("TILEFIT_CAPTURE_EVENTS")
    if events:
        with open(events, "a", encoding="utf-8") as out:
            out.write(json.dumps({"gap": what, "tool": tool}) + "\n")
    return 2


def _nvidia_field(device, field):
    fields = {
        "name": device.get("name"),
        "gpu_name": device.get("name"),
        "compute_cap": f"{device['major']}.{device['minor']}",
        "index": "0",
        "count": "1",
    }
    if field in fields and fields[field] is not None:
        return fields[field]
    return None


def _nvidia_smi(device, args):
    tool = "nvidia-smi"
    if device["backend"] != "cuda":
        print(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
            file=sys.stderr,
        )
        return 9
    name = device.get("name")
    if name is None:
        return _gap(device, "reported name", tool)
    query = next(
        (a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None
    )
    if query is None and "--query-gpu" in args:
        at = args.index("--query-gpu")
        query = args[at + 1] if at + 1 < len(args) else ""
    if query is not None:
        formats = next(
            (a.split("=", 1)[1] for a in args if a.startswith("--format=")), "csv"
        )
        fields = [f.strip() for f in query.split(",") if f.strip()]
        values = []
        for field in fields:
            value = _nvidia_field(device, field)
            if value is None:
                return _gap(device, f"`{field}`", tool)
            values.append(value)
        if "noheader" not in formats:
            print(", ".join(fields))
        print(", ".join(values))
        return 0
    if "-L" in args or "--list-gpus" in args:
        print(f"GPU 0: {name}")
        return 0
    known = {"-i", "0", "--id=0", "-q", "--query"}
    unknown = [a for a in args if a not in known]
    if unknown:
        return _gap(device, f"answer to `nvidia-smi {' '.join(unknown)}`", tool)
    print(
        f"GPU 0: {name} (emulated by tilefit: compute capability {device['major']}.{device['minor']})"
    )
    return 0


def _amd_tool(device, tool, args):
    if device["backend"] != "hip":
        print(
            "ERROR: No AMD GPUs specified / amdgpu driver not loaded", file=sys.stderr
        )
        return 2
    name = device.get("name")
    if name is None:
        return _gap(device, "reported name", tool)
    if tool == "rocm-smi":
        if not args or "--showproductname" in args or "-i" in args:
            print(f"GPU[0]\t\t: Card Series: \t\t{name}")
            print(f"GPU[0]\t\t: GFX Version: \t\t{device['arch']}")
            return 0
        if "--showid" in args:
            print("GPU[0]\t\t: Device Name: \t\t" + name)
            return 0
        return _gap(device, f"answer to `rocm-smi {' '.join(args)}`", tool)
    if not args or args[0] in ("list", "static"):
        print("GPU: 0")
        print(f"    MARKET_NAME: {name}")
        print(f"    TARGET_GRAPHICS_VERSION: {device['arch']}")
        return 0
    return _gap(device, f"answer to `amd-smi {' '.join(args)}`", tool)


def main(tool, device_file, args):
    with open(device_file, encoding="utf-8") as f:
        device = json.load(f)
    if tool == "nvidia-smi":
        return _nvidia_smi(device, args)
    return _amd_tool(device, tool, args)


# --- the libraries: NVML and amdsmi, patched as they are imported ------------------------------


def _nvml_patches(module, device):
    from tilefit._emulation import EmulationGap

    error = getattr(module, "NVMLError", RuntimeError)
    cuda = device["backend"] == "cuda"

    class _Handle:
        index = 0

    def needs_cuda():
        if not cuda:
            # As on a machine with no NVIDIA driver.
            raise error(getattr(module, "NVML_ERROR_LIBRARY_NOT_FOUND", 12))

    def init(*_args, **_kwargs):
        needs_cuda()

    def count():
        needs_cuda()
        return 1

    def handle(index):
        needs_cuda()
        if int(index) != 0:
            raise error(getattr(module, "NVML_ERROR_INVALID_ARGUMENT", 2))
        return _Handle()

    def name(_handle):
        if device.get("name") is None:
            raise EmulationGap("reported name")
        return device["name"]

    def capability(_handle):
        return (device["major"], device["minor"])

    def lacking(what):
        def raise_gap(*_args, **_kwargs):
            raise EmulationGap(what)

        return raise_gap

    return {
        "nvmlInit": init,
        "nvmlInitWithFlags": init,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": count,
        "nvmlDeviceGetHandleByIndex": handle,
        "nvmlDeviceGetName": name,
        "nvmlDeviceGetCudaComputeCapability": capability,
        "nvmlDeviceGetMemoryInfo": lacking("total memory (NVML)"),
        "nvmlDeviceGetUUID": lacking("UUID (NVML)"),
        "nvmlSystemGetDriverVersion": lacking("driver version (NVML)"),
        "nvmlSystemGetCudaDriverVersion": lacking("CUDA driver version (NVML)"),
        "nvmlSystemGetCudaDriverVersion_v2": lacking("CUDA driver version (NVML)"),
        "nvmlDeviceGetPciInfo": lacking("PCI bus id (NVML)"),
        "nvmlDeviceGetTopologyCommonAncestor": lacking("GPU topology (NVML)"),
        "nvmlDeviceGetP2PStatus": lacking("peer-to-peer status (NVML)"),
        "nvmlDeviceGetNvLinkState": lacking("NVLink state (NVML)"),
    }


def _amdsmi_patches(module, device):
    from tilefit._emulation import EmulationGap

    error = getattr(module, "AmdSmiException", RuntimeError)
    hip = device["backend"] == "hip"

    def init(*_args, **_kwargs):
        if not hip:
            raise error("amdgpu driver not loaded")

    def handles(*_args, **_kwargs):
        init()
        return ["tilefit-emulated-gpu-0"]

    def asic(_handle):
        if device.get("name") is None:
            raise EmulationGap("reported name")
        return {
            "market_name": device["name"],
            "target_graphics_version": device["arch"],
        }

    return {
        "amdsmi_init": init,
        "amdsmi_shut_down": lambda: None,
        "amdsmi_get_processor_handles": handles,
        "amdsmi_get_gpu_asic_info": asic,
    }


_PATCHES = {"pynvml": _nvml_patches, "amdsmi": _amdsmi_patches}


#: Why NVML's and amdsmi's device functions are replaced.
_WHY = "the vendor library's device queries answer for the emulated device"


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, real, patches):
        self._real = real
        self._patches = patches

    def create_module(self, spec):
        return self._real.create_module(spec)

    def exec_module(self, module):
        self._real.exec_module(module)
        for name, value in self._patches(module).items():
            REGISTRY.replace(module, name, value, _WHY)


class _Finder(importlib.abc.MetaPathFinder):
    """Patches ``pynvml`` (and vendored ``*.pynvml``) and ``amdsmi`` as they are imported: the
    real module, with its device functions answering for the emulated device."""

    def __init__(self, device):
        self._device = device

    def find_spec(self, fullname, path, target=None):
        last = fullname.rpartition(".")[2]
        patch = _PATCHES.get(last)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(
                    spec.loader,
                    lambda m, patch=patch, device=self._device: patch(m, device),
                )
                return spec
        return None


def install_libraries(device):
    """Patch NVML and amdsmi wherever they are imported from now on (and where already)."""
    for name, module in list(sys.modules.items()):
        patch = _PATCHES.get(name.rpartition(".")[2])
        if patch is not None and module is not None:
            for key, value in patch(module, device).items():
                REGISTRY.replace(module, key, value, _WHY)
    REGISTRY.insert(
        sys.meta_path,
        0,
        _Finder(device),
        "NVML and amdsmi are patched as they are imported",
        where="sys.meta_path",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
