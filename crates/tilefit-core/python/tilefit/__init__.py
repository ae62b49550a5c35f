"""tilefit at run time: pick the Triton config that fits the device the code is on.

Offline, ``tilefit probe --emit-configs fix.json`` compiles every config for every arch and writes
the recommended one per arch. At start-up an engine asks this package for its device's entry:

    import tilefit
    config = tilefit.load("fix.json").config_for(variant={"kv_dtype": "fp8e4nv"})

Where there is no offline answer, :func:`fit` applies the rule on the spot: compile each candidate
for the current device with the caller's real arguments (Triton's own ``warmup``, no launch), read
the shared memory the compiler allocated, and keep the first that fits the device's per-block
opt-in budget. :func:`prune` turns an export into an autotuner ``early_config_prune``.

The package imports neither torch nor Triton until a call needs the live device.
"""

from tilefit._choices import Choices, TableMismatch, load
from tilefit._device import Device, current_device
from tilefit._errors import (
    BadExport,
    NoConfigFits,
    NoDevice,
    NotProbed,
    TilefitError,
    UnknownDevice,
)
from tilefit._fit import Fit, Rejection, fit
from tilefit._prune import prune

__all__ = [
    "BadExport",
    "Choices",
    "Device",
    "Fit",
    "NoConfigFits",
    "NoDevice",
    "NotProbed",
    "Rejection",
    "TableMismatch",
    "TilefitError",
    "UnknownDevice",
    "current_device",
    "fit",
    "load",
    "prune",
]
