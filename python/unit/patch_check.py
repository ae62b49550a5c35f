"""Run in a fresh Python by ``test_patches.py``: install the whole emulation of a capture's main
process (as ``tilefit._capture_main`` does, but the audit hook), compare every module and class
that was loaded before with what it held, restore the registry, compare again, and print what
was found as one JSON line.

    python patch_check.py DEVICE.json SCRATCH [--plant=new|over]

``--plant=new`` adds an attribute outside the registry after the install, ``--plant=over``
overwrites a patched one, as a patch that skipped the registry would: the check must find each.
"""

import json
import os
import signal
import sys
import types
import warnings

#: What the install reaches, imported first so its changes are to modules that were there.
PRELOAD = (
    "torch",
    "torch.cuda",
    "torch.cuda.graphs",
    "torch.testing",
    "torch.random",
    "torch.utils",
    "torch.serialization",
    "torch.autograd.variable",
    "torch.autograd.function",
    "torch.autograd.graph",
    "torch._subclasses.fake_tensor",
    "torch._dynamo",
    "torch._inductor.config",
    "torch._inductor.codecache",
    "torch._inductor.compile_fx",
    "torch._inductor.runtime.triton_helpers",
    "torch._inductor.runtime.triton_heuristics",
    "torch._inductor.select_algorithm",
    "torch._inductor.fx_passes.joint_graph",
    "torch._inductor.runtime.hints",
    "torch._dynamo.device_interface",
    "torch.multiprocessing.spawn",
    "triton",
    "triton.testing",
    "triton.runtime.driver",
    "triton.runtime.autotuner",
    "triton.runtime.jit",
    "subprocess",
    "threading",
    "multiprocessing.process",
    "pynvml",
    "tilefit._audit",
    "tilefit._autograd",
    "tilefit._capture",
    "tilefit._children",
    "tilefit._generated",
    "tilefit._records",
    "tilefit._emulation",
    "tilefit._inductor",
    "tilefit._lifetime",
    "tilefit._processes",
    "tilefit._system",
    "tilefit._values",
    "tilefit.emulate",
)


def _owners():
    """Every loaded module, and every class one of them defines (by the name it is held by)."""
    seen = set()
    for module in list(sys.modules.values()):
        if not isinstance(module, types.ModuleType) or id(module) in seen:
            continue
        seen.add(id(module))
        yield module
        try:
            values = list(vars(module).values())
        except TypeError:
            continue
        for value in values:
            if isinstance(value, type) and id(value) not in seen:
                seen.add(id(value))
                yield value
    # Instances a patch replaces an attribute of (Triton's driver config).
    yield sys.modules["triton.runtime.driver"].driver


def _owner_name(owner):
    # The registry's own naming, so a place it lists is the place found here.
    from tilefit._patches import _owner_name as name

    return name(owner)


def snapshot():
    """(owner name, attribute) -> id of the value, for every owner; the process's own lists."""
    with warnings.catch_warnings():
        # A deprecated module attribute warns when it is looked at.
        warnings.simplefilter("ignore")
        held = _attributes()
    # Lists and mappings by their contents, interned so that equal contents are one object.
    for key, value in (
        (("os", "environ"), repr(sorted(os.environ.items()))),
        (("sys", "meta_path"), repr([id(f) for f in sys.meta_path])),
        (("sys", "path"), repr(sys.path)),
        (("warnings", "filters"), repr(warnings.filters)),
        (("signal", "SIGTERM"), repr(signal.getsignal(signal.SIGTERM))),
    ):
        held[key] = (sys.intern(value), None, None, False)
    return held


def _attributes():
    held = {}
    for owner in _owners():
        try:
            items = list(vars(owner).items())
        except TypeError:
            continue
        name = _owner_name(owner)
        for key, value in items:
            held[(name, key)] = (value, owner, key, True)
        # torch's config modules keep their values outside their __dict__.
        config = (
            vars(owner).get("_config") if isinstance(owner, types.ModuleType) else None
        )
        if isinstance(config, dict):
            for key, entry in config.items():
                if getattr(entry, "alias", None):
                    # Another entry's value under an older name: that entry is compared.
                    continue
                # Set by users, never counted: a change is a change.
                held[(name, key)] = (getattr(owner, key, None), owner, key, False)
    return held


#: Changes that are Python's own bookkeeping, not a patch (a module's warning registry).
_BOOKKEEPING = {"__warningregistry__", "__annotations__", "_abc_impl"}

_GONE = object()


def _counter(value):
    return isinstance(value, (bool, int))


def changed(before, after):
    """The (owner, attribute) pairs whose value differs, added or went away, apart from
    bookkeeping: a submodule bound to its package as it was imported, a count or a flag a library
    keeps as it runs (torch's cache misses, whether a dispatch mode is on)."""
    out = []
    for key in sorted(set(before) | set(after), key=repr):
        old, new = before.get(key), after.get(key)
        if old is not None and new is not None and old[0] is new[0]:
            continue
        if key[1] in _BOOKKEEPING:
            continue
        if old is not None and new is None and old[1] is not None:
            # Its owner is no longer reached by its name (a class replaced in its module): the
            # owner itself is read.
            current = vars(old[1]).get(old[2], _GONE)
            if current is old[0]:
                continue
            new = (current, old[1], old[2], old[3])
        if old is None and new is not None and new[1] is not None:
            if isinstance(new[0], types.ModuleType):
                continue
            # An owner first seen now (a class defined by a module imported by the install).
            if all(k[0] != key[0] for k in before):
                continue
        counted = old is not None and old[3]
        if counted and new is not None and _counter(old[0]) and _counter(new[0]):
            if type(old[0]) is type(new[0]) and key[0].startswith("torch."):
                continue
        out.append(f"{key[0]}.{key[1]}")
    return out


def main(device_file, scratch, plant):
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    with open(device_file, encoding="utf-8") as f:
        device = json.load(f)
    from tilefit import _capture, _children, _emulation, _inductor, _processes, _system
    from tilefit._patches import REGISTRY

    before = snapshot()
    emulation = _emulation.install(device)
    _system.write_tools(device, os.path.join(scratch, "bin"), device_file)
    _system.install_libraries(device)
    recorder = _capture.Recorder(device)
    _capture.install(recorder, emulation)
    _inductor.install(recorder, emulation)
    _children.child_environment(
        device_file, os.path.join(scratch, "children"), [scratch + os.sep], scratch
    )
    _processes.install(recorder, emulation, out=None, key="")
    import torch

    answered = {
        "capability": list(torch.cuda.get_device_capability()),
        "name": torch.cuda.get_device_name(),
        "fake": type(torch.empty(2, device="cuda")).__name__,
    }
    if "new" in plant:
        torch.cuda.planted_query = lambda: 0
    if "over" in plant:
        import triton.testing

        triton.testing.do_bench = lambda *args, **kwargs: 0.0
    installed = snapshot()
    listing = REGISTRY.listing()
    registered = {where for kind, where, _ in listing}
    # A change is registered when its place is listed: an attribute as owner.name, a list or
    # mapping under the name it was registered with.
    made = changed(before, installed)
    unregistered = [
        place
        for place in made
        if place not in registered and not _listed_as_item(place, registered)
    ]
    drifted = REGISTRY.drifted()
    failed = REGISTRY.restore()
    restored = snapshot()
    left = changed(before, restored)
    print(
        json.dumps(
            {
                "answered": answered,
                "listing": listing,
                "changed": made,
                "unregistered": unregistered,
                "drifted": drifted,
                "undo_failed": failed,
                "left": left,
                "active_after": REGISTRY.active(),
                "installed_after": _emulation.installed() is not None,
            }
        )
    )


def _listed_as_item(place, registered):
    """``os.environ``, ``sys.meta_path``... changed: listed where an item of it was registered."""
    return any(w == place or w.startswith(place + "[") for w in registered)


if __name__ == "__main__":
    plants = [a.split("=", 1)[1] for a in sys.argv[3:] if a.startswith("--plant=")]
    main(sys.argv[1], sys.argv[2], plants)
