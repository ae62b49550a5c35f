"""The device the code runs on, read from the driver: its arch and its per-block opt-in budget.

torch is used when it is importable (``torch.cuda.get_device_properties``); otherwise Triton's
active driver. Neither is imported before a call needs the live device.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tilefit._errors import NoDevice

_NO_DEVICE_HINT = (
    'name the device instead: device="sm_120" (an arch), "rtx-pro-6000" or a product name, '
    "or pass fallback= to config_for"
)

_ARCH = re.compile(r"^(sm_\d+[a-z]?|gfx[0-9a-f]+)$")


@dataclass(frozen=True)
class Device:
    """A GPU as the driver reports it."""

    #: ``sm_90``, ``sm_120``, ``gfx942``: the key every tilefit export uses.
    arch: str
    #: The driver's product name (``NVIDIA H200``), for messages and cross-checks only.
    name: str
    #: The driver's ``shared_memory_per_block_optin`` in bytes; None where it cannot be read.
    smem_per_block_optin: int | None
    #: The device ordinal.
    index: int


def is_arch(text):
    """Whether ``text`` is an arch name (``sm_90``, ``gfx942``) rather than a product."""
    return bool(_ARCH.match(text))


def _index_of(device):
    if device is None:
        return None
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    kind = getattr(device, "type", None)
    if kind is not None and kind not in ("cuda", "hip"):
        raise ValueError(f"tilefit judges CUDA/HIP devices; got a `{kind}` device")
    return index


def current_device(device=None):
    """The live :class:`Device`: ``device`` is None (the current one), an ordinal or a
    ``torch.device``."""
    index = _index_of(device)
    try:
        import torch  # noqa: F401
    except ImportError:
        return _from_triton(index)
    return _from_torch(index)


def _from_torch(index):
    import torch

    if not torch.cuda.is_available():
        raise NoDevice(f"no CUDA/HIP device is visible to torch: {_NO_DEVICE_HINT}")
    if index is None:
        index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    if getattr(torch.version, "hip", None):
        arch = props.gcnArchName.split(":")[0]
    else:
        arch = f"sm_{props.major}{props.minor}"
    optin = getattr(props, "shared_memory_per_block_optin", None)
    return Device(arch=arch, name=props.name, smem_per_block_optin=optin, index=index)


def _from_triton(index):
    try:
        from triton.runtime import driver

        active = driver.active
        # Resolving the active driver is lazy: the first attribute read raises where no GPU is.
        active.get_current_target()
    except ImportError as e:
        raise NoDevice(
            f"neither torch nor Triton is importable to read the device: {_NO_DEVICE_HINT}"
        ) from e
    except RuntimeError as e:  # Triton's "0 active drivers"
        raise NoDevice(f"no GPU driver is active here ({e}): {_NO_DEVICE_HINT}") from e
    if index is None:
        index = active.get_current_device()
    target = active.get_current_target()
    if target.backend == "cuda":
        arch = f"sm_{target.arch}"
    else:
        arch = str(target.arch).split(":")[0]
    props = active.utils.get_device_properties(index)
    return Device(
        arch=arch,
        name=str(props.get("name", arch)),
        smem_per_block_optin=props.get("max_shared_mem"),
        index=index,
    )


def budget_of(device):
    """The budget :func:`tilefit.fit` judges against: the driver's opt-in value."""
    if device.smem_per_block_optin is None:
        raise RuntimeError(
            f"the driver did not report shared_memory_per_block_optin for {device.name} "
            f"({device.arch}): upgrade torch, or pass budget= explicitly"
        )
    return int(device.smem_per_block_optin)
