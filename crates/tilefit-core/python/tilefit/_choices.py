"""The offline choices: a file written by ``tilefit probe --emit-configs FILE.json``.

Looked up by arch (``sm_90``, ``gfx942``), never by marketing name; the names in the file only
cross-check the live device.
"""

import json
import os
import re
import warnings

from tilefit._device import current_device, is_arch
from tilefit._errors import (
    BadExport,
    NoConfigFits,
    NoDevice,
    NotProbed,
    UnknownDevice,
)

_MISSING = object()


_VENDOR_WORDS = {"nvidia", "geforce", "amd", "radeon", "instinct", "tesla"}


def normalize_name(name):
    """The lookup key of a device name, as tilefit's table builds it (``normalize_name`` in
    ``device/names.rs``): lowercase, vendor words and punctuation dropped, so ``rtx-pro-6000``,
    ``RTX PRO 6000`` and ``NVIDIA RTX PRO 6000`` are one key."""
    lower = name.strip().lower()
    if lower.startswith("gfx"):
        lower = lower.split(":")[0]
    cc = re.fullmatch(r"([0-9]+)\.([0-9])", lower)
    if cc:
        return f"sm{cc.group(1)}{cc.group(2)}"
    # Tokens are runs of letters and digits, any script (Rust's `char::is_alphanumeric`).
    joined = "".join(
        t for t in re.split(r"[\W_]+", lower) if t and t not in _VENDOR_WORDS
    )
    arch = re.fullmatch(r"(sm[0-9]+)[af]", joined)
    return arch.group(1) if arch else joined


class TableMismatch(UserWarning):
    """The live device disagrees with tilefit's device table (budget or arch)."""


SCHEMA_VERSION = 1


def load(path):
    """Read an ``--emit-configs`` JSON export. Every malformed file (unreadable, not UTF-8, not
    JSON, nested too deep, another schema, a field of the wrong shape) raises a
    :class:`BadExport` that names the file and the field."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise BadExport(f"{path}: cannot read it ({e.strerror})") from e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadExport(
            f"{path}: is not UTF-8 text (byte {e.start}): pass the JSON file "
            "`tilefit probe --emit-configs FILE.json` wrote"
        ) from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadExport(
            f"{path}: is not JSON ({e}): pass the file `tilefit probe --emit-configs FILE.json` wrote"
        ) from e
    except RecursionError as e:
        raise BadExport(
            f"{path}: is nested too deeply to be an export tilefit wrote ({e})"
        ) from e
    return Choices(data, path)


def _field(path, where, what):
    return BadExport(
        f"{path}: field `{where}` {what}: pass the JSON `tilefit probe --emit-configs FILE.json` "
        "wrote, unedited"
    )


def _str_map(data, key, path):
    value = data.get(key, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise _field(path, key, "is not an object of names to archs")
    return value


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_autotune_config(config, path, where):
    """One exported ``triton.Config``: ``kwargs`` as [name, scalar] pairs and whole-number
    options, as ``tilefit.prune`` matches them."""
    if not isinstance(config, dict):
        raise _field(path, where, "is not an object")
    kwargs = config.get("kwargs")
    if not isinstance(kwargs, list) or not all(
        isinstance(pair, list)
        and len(pair) == 2
        and isinstance(pair[0], str)
        and (pair[1] is None or isinstance(pair[1], (str, int, float, bool)))
        for pair in kwargs
    ):
        raise _field(path, f"{where}.kwargs", "is not a list of [name, value] pairs")
    for option in ("num_warps", "num_stages"):
        if not _whole(config.get(option)):
            raise _field(path, f"{where}.{option}", "is not a whole number")
    for option in ("num_ctas", "maxnreg"):
        if config.get(option) is not None and not _whole(config[option]):
            raise _field(
                path, f"{where}.{option}", "is neither a whole number nor null"
            )


def _validate(data, path):
    """The export's shape, checked once where it is read."""
    if not isinstance(data, dict):
        raise BadExport(
            f"{path}: is a JSON {type(data).__name__}, not an export object: pass the JSON "
            "`tilefit probe --emit-configs FILE.json` wrote (a .py export is for pasting, not loading)"
        )
    if "by_arch" not in data:
        raise BadExport(
            f"{path}: has no `by_arch`: pass the JSON `tilefit probe --emit-configs FILE.json` "
            "wrote (a .py export is for pasting, not loading)"
        )
    version = data.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise _field(
            path,
            "schema_version",
            f"is {version!r}; this package reads schema {SCHEMA_VERSION} (upgrade tilefit, or "
            "export again with this one)",
        )
    by_arch = data["by_arch"]
    if not isinstance(by_arch, dict):
        raise _field(
            path, "by_arch", f"is a {type(by_arch).__name__}, not an object of archs"
        )
    for arch, entries in by_arch.items():
        if not isinstance(entries, list):
            raise _field(path, f"by_arch.{arch}", "is not a list of choices")
        for i, entry in enumerate(entries):
            where = f"by_arch.{arch}[{i}]"
            if not isinstance(entry, dict):
                raise _field(path, where, "is not an object")
            if not isinstance(entry.get("variant"), dict):
                raise _field(path, f"{where}.variant", "is missing or not an object")
            if "config" not in entry or (
                entry["config"] is not None and not isinstance(entry["config"], dict)
            ):
                raise _field(
                    path, f"{where}.config", "is missing or neither an object nor null"
                )
            budget = entry.get("budget")
            if budget is not None and (
                not isinstance(budget, int) or isinstance(budget, bool)
            ):
                raise _field(path, f"{where}.budget", "is not a whole number of bytes")
    devices = _str_map(data, "devices", path)
    names = _str_map(data, "device_names", path)
    kernel = data.get("kernel", {})
    if not isinstance(kernel, dict):
        raise _field(path, "kernel", "is not an object")
    autotune = data.get("autotune")
    if autotune is not None:
        if not isinstance(autotune, dict) or not isinstance(
            autotune.get("by_arch"), dict
        ):
            raise _field(path, "autotune.by_arch", "is not an object of archs")
        for arch, lists in autotune["by_arch"].items():
            if not isinstance(lists, list):
                raise _field(
                    path, f"autotune.by_arch.{arch}", "is not a list of pruned lists"
                )
            for i, pruned in enumerate(lists):
                where = f"autotune.by_arch.{arch}[{i}]"
                if not isinstance(pruned, dict) or not isinstance(
                    pruned.get("variant"), dict
                ):
                    raise _field(path, where, "is not a pruned list with its variant")
                configs = pruned.get("configs")
                if not isinstance(configs, list):
                    raise _field(path, f"{where}.configs", "is not a list")
                for j, config in enumerate(configs):
                    _check_autotune_config(config, path, f"{where}.configs[{j}]")
    return by_arch, devices, names, kernel


def _variant_text(variant):
    return ", ".join(f"{k}={v}" for k, v in sorted(variant.items())) or "(no variant)"


class Choices:
    """The per-arch recommended configs of one kernel."""

    def __init__(self, data, path="<export>"):
        by_arch, devices, names, kernel = _validate(data, path)
        self.path = path
        self.data = data
        #: arch -> [{variant, config, shared_bytes, budget, baseline_fits}]
        self.by_arch = by_arch
        #: fleet device name (``rtx-pro-6000``) -> arch
        self.devices = devices
        #: product name (``NVIDIA H100 80GB HBM3``) and alias -> arch, for every product of
        #: tilefit's table
        self.device_names = names
        #: The Triton the choices were compiled with.
        self.triton_version = data.get("triton_version")
        self.kernel = kernel

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
        try:
            arch, _ = self.arch_of(device)
        except (UnknownDevice, NoDevice):
            if fallback is not _MISSING:
                return {"variant": variant or {}, "config": fallback, "fallback": True}
            raise
        entries = self.by_arch.get(arch)
        if entries is None:
            if fallback is not _MISSING:
                return {"variant": variant or {}, "config": fallback, "fallback": True}
            raise NotProbed(
                f"{arch} was not probed: {self.path} has {', '.join(self.archs)}. Probe it "
                f"(`tilefit probe SPEC --targets {arch} --emit-configs ...`) or pass fallback="
            )
        try:
            entry = self._variant(entries, variant, arch)
        except NotProbed:
            # A variant this arch was not probed for has no answer either; an ambiguous question
            # (several variants, none named) is the caller's to fix and still raises.
            if fallback is not _MISSING and variant is not None:
                return {"variant": variant, "config": fallback, "fallback": True}
            raise
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
