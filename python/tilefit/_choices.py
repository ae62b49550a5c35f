"""The offline choices: a file written by ``tilefit probe --emit-configs FILE.json``.

Looked up by arch (``sm_90``, ``gfx942``), never by marketing name; the names in the file only
cross-check the live device.
"""

import json
import os
import re
import warnings

from tilefit._device import current_device, is_arch
from tilefit._errors import NoConfigFits, NotProbed, TilefitError, UnknownDevice

_MISSING = object()


_VENDOR_WORDS = {"nvidia", "geforce", "amd", "radeon", "instinct", "tesla"}


def normalize_name(name):
    """The lookup key of a device name, as tilefit's table builds it (``normalize_name`` in
    ``device/names.rs``): lowercase, vendor words and punctuation dropped, so ``rtx-pro-6000``,
    ``RTX PRO 6000`` and ``NVIDIA RTX PRO 6000`` are one key."""
    lower = name.strip().lower()
    if lower.startswith("gfx"):
        lower = lower.split(":")[0]
    cc = re.fullmatch(r"(\d+)\.(\d)", lower)
    if cc:
        return f"sm{cc.group(1)}{cc.group(2)}"
    joined = "".join(
        t for t in re.split(r"[^0-9a-z]+", lower) if t and t not in _VENDOR_WORDS
    )
    arch = re.fullmatch(r"(sm\d+)[af]", joined)
    return arch.group(1) if arch else joined


class TableMismatch(UserWarning):
    """The live device disagrees with tilefit's device table (budget or arch)."""


def load(path):
    """Read an ``--emit-configs`` JSON export."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise TilefitError(f"{path}: cannot read it ({e.strerror})") from e
    except json.JSONDecodeError as e:
        raise TilefitError(
            f"{path}: is not JSON ({e}): pass the file `tilefit probe --emit-configs FILE.json` wrote"
        ) from e
    return Choices(data, path)


def _variant_text(variant):
    return ", ".join(f"{k}={v}" for k, v in sorted(variant.items())) or "(no variant)"


class Choices:
    """The per-arch recommended configs of one kernel."""

    def __init__(self, data, path="<export>"):
        if not isinstance(data, dict) or "by_arch" not in data:
            raise TilefitError(
                f"{path}: has no `by_arch`: pass the JSON `tilefit probe --emit-configs FILE.json` "
                "wrote (a .py export is for pasting, not loading)"
            )
        self.path = path
        self.data = data
        #: arch -> [{variant, config, shared_bytes, budget, baseline_fits}]
        self.by_arch = data["by_arch"]
        #: fleet device name (``rtx-pro-6000``) -> arch
        self.devices = data.get("devices", {})
        #: product name (``NVIDIA H100 80GB HBM3``) -> arch
        self.device_names = data.get("device_names", {})
        #: The Triton the choices were compiled with.
        self.triton_version = data.get("triton_version")
        self.kernel = data.get("kernel", {})

    @property
    def archs(self):
        """The archs the export has answers for."""
        return sorted(self.by_arch)

    def arch_of(self, device=None):
        """The arch a device resolves to, and the live :class:`Device` when it was read."""
        if isinstance(device, str):
            if is_arch(device):
                return device, None
            key = normalize_name(device)
            for table in (self.devices, self.device_names):
                for name, arch in table.items():
                    if normalize_name(name) == key:
                        return arch, None
            raise UnknownDevice(
                f"`{device}` is neither an arch (sm_90, gfx942) nor a device of {self.path} "
                f"(fleet: {', '.join(sorted(self.devices)) or 'none'}): name its arch instead"
            )
        live = current_device(device)
        self._cross_check(live)
        return live.arch, live

    def _cross_check(self, live):
        named = self.device_names.get(live.name)
        if named is not None and named != live.arch:
            warnings.warn(
                f"{live.name} is {named} in tilefit's table but the driver reports {live.arch}: "
                f"looking it up as {live.arch}",
                TableMismatch,
                stacklevel=4,
            )
        budgets = {e.get("budget") for e in self.by_arch.get(live.arch, [])} - {None}
        if live.smem_per_block_optin is not None:
            for budget in budgets:
                if budget != live.smem_per_block_optin:
                    warnings.warn(
                        f"{live.name} ({live.arch}) reports shared_memory_per_block_optin = "
                        f"{live.smem_per_block_optin} bytes, but {self.path} judged {live.arch} "
                        f"against {budget}: re-probe with this device's budget",
                        TableMismatch,
                        stacklevel=4,
                    )

    def entry_for(self, variant=None, device=None, fallback=_MISSING):
        """The whole record for a device: ``{variant, config, shared_bytes, budget,
        baseline_fits}``. ``fallback`` is returned, as the config, for an arch that was not
        probed."""
        arch, _ = self.arch_of(device)
        entries = self.by_arch.get(arch)
        if entries is None:
            if fallback is not _MISSING:
                return {"variant": variant or {}, "config": fallback, "fallback": True}
            raise NotProbed(
                f"{arch} was not probed: {self.path} has {', '.join(self.archs)}. Probe it "
                f"(`tilefit probe SPEC --targets {arch} --emit-configs ...`) or pass fallback="
            )
        entry = self._variant(entries, variant, arch)
        if entry["config"] is None:
            raise NoConfigFits(
                f"no swept config of {self.kernel.get('function', 'the kernel')} compiles and fits {arch} "
                f"for {_variant_text(entry['variant'])} (budget {entry.get('budget')} bytes): "
                "add smaller tiles or fewer stages to the sweep"
            )
        return entry

    def _variant(self, entries, variant, arch):
        if variant is None:
            if len(entries) == 1:
                return entries[0]
            raise NotProbed(
                f"{self.path} has {len(entries)} variants for {arch}; pass variant= one of: "
                + "; ".join(_variant_text(e["variant"]) for e in entries)
            )
        want = {k: str(v) for k, v in variant.items()}
        for entry in entries:
            if {k: str(v) for k, v in entry["variant"].items()} == want:
                return entry
        raise NotProbed(
            f"variant {_variant_text(want)} was not probed for {arch}; {self.path} has: "
            + "; ".join(_variant_text(e["variant"]) for e in entries)
        )

    def config_for(self, variant=None, device=None, fallback=_MISSING):
        """The recommended config for ``device``: None for the current CUDA/HIP device, an
        ordinal or ``torch.device``, a fleet name (``"rtx-pro-6000"``), a product name or an arch
        (``"sm_120"``). Returns a fresh dict of the constexprs and launch options."""
        entry = self.entry_for(variant=variant, device=device, fallback=fallback)
        config = entry["config"]
        return dict(config) if isinstance(config, dict) else config


__all__ = ["Choices", "TableMismatch", "load"]
