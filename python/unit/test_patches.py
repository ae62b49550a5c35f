"""The patch registry: each kind of change undone; the whole emulation of a capture's process
listed, with a reason each, and restored so that nothing is left; a change made outside the
registry found; one device per process."""

import json
import os
import signal
import subprocess
import sys
import types

import pytest
from conftest import HERE, device, device_file

from tilefit._patches import Registry


class _Base:
    inherited = "base"


class _Class(_Base):
    own = "own"


def test_each_kind_of_change_is_undone_last_first():
    registry = Registry()
    module = types.ModuleType("planted")
    module.value = 1
    mapping = {"kept": "a"}
    sequence = ["first"]
    entered = []

    class Context:
        def __enter__(self):
            entered.append("in")
            return self

        def __exit__(self, *exc):
            entered.append("out")
            return False

    calls = []
    registry.replace(module, "value", 2, "a module's value")
    registry.replace(module, "added", 3, "a name the module did not have")
    registry.replace(_Class, "own", "patched", "a class's own attribute")
    registry.replace(_Class, "inherited", "patched", "an inherited one")
    registry.replace(_Class, "own", "again", "patched twice")
    registry.set_item(mapping, "kept", "b", "a key's value")
    registry.set_item(mapping, "new", "c", "a new key")
    registry.insert(sequence, 0, "hook", "a list's item")
    registry.enter(Context(), "a context")
    previous = registry.signal(signal.SIGUSR1, lambda *_: None, "a signal handler")
    registry.done(
        "a call", "a change made by the caller", lambda: calls.append("undone")
    )
    registry.permanent("a hook", "one Python cannot remove")
    assert (module.value, module.added, _Class.own, _Class.inherited) == (
        2,
        3,
        "again",
        "patched",
    )
    assert len(registry.listing()) == 12
    assert all(why for _, _, why in registry.listing())
    assert registry.active()
    assert registry.drifted() == []
    module.value = 9
    assert registry.drifted() == ["planted.value"]

    assert registry.restore() == []
    assert module.value == 1 and not hasattr(module, "added")
    assert _Class.own == "own" and _Class.inherited == "base"
    assert "inherited" not in vars(_Class)
    assert mapping == {"kept": "a"} and sequence == ["first"]
    assert entered == ["in", "out"] and calls == ["undone"]
    assert signal.getsignal(signal.SIGUSR1) is previous
    assert not registry.active() and registry.listing() == []


def test_a_patch_needs_its_reason_and_a_failed_undo_stops_no_other():
    registry = Registry()
    module = types.ModuleType("planted")
    with pytest.raises(ValueError, match="needs its reason"):
        registry.replace(module, "value", 1, "")

    def fail():
        raise OSError("gone")

    registry.replace(module, "value", 1, "a value")
    registry.done("broken", "an undo that fails", fail)
    assert registry.restore() == [("broken", "OSError: gone")]
    assert not hasattr(module, "value")


def _check(name, scratch, *plant):
    run = subprocess.run(
        [
            sys.executable,
            os.path.join(HERE, "patch_check.py"),
            device_file(name),
            scratch,
            *plant,
        ],
        capture_output=True,
        text=True,
        cwd=scratch,
        env={**os.environ, "PYTHONPATH": os.path.dirname(HERE)},
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_emulation_lists_every_patch_and_restores_them(scratch):
    name = "mi300x"
    found = _check(name, scratch)
    wanted = device(name)
    # It was installed: the device answered as the table's.
    assert found["answered"]["capability"] == [wanted["major"], wanted["minor"]]
    assert found["answered"]["name"] == wanted["name"]
    assert found["answered"]["fake"] == "FakeTensor"
    places = [where for _, where, _ in found["listing"]]
    for place in (
        "torch.cuda.get_device_properties",
        "triton.runtime.jit.JITFunction.run",
        "torch._inductor.config.compile_threads",
        "torch.autograd.variable.Variable._execution_engine",
        "subprocess.Popen.__init__",
        "sys.meta_path",
        "os.register_at_fork",
    ):
        assert place in places, place
    assert len(found["listing"]) > 100
    # Every change is the registry's, still as it set it; all undone; the hooks Python keeps
    # are inert; the public API answers that nothing is emulated.
    assert found["unregistered"] == []
    assert found["drifted"] == []
    assert found["undo_failed"] == []
    assert found["left"] == []
    assert found["active_after"] is False
    assert found["installed_after"] is False


def test_a_change_outside_the_registry_is_found(scratch):
    found = _check("h100", scratch, "--plant=new", "--plant=over")
    assert found["unregistered"] == ["torch.cuda.planted_query"]
    assert found["drifted"] == ["triton.testing.do_bench"]
    # The planted name is not the registry's to undo: it is left, and found again.
    assert found["left"] == ["torch.cuda.planted_query"]


def test_one_device_per_process(emulated):
    """ARCHITECTURE.md, "One process per target": a second device in the same process is
    refused, the same one is the same emulation."""
    first = emulated("h100")
    assert emulated("h100") is first
    with pytest.raises(RuntimeError, match="one process per target"):
        emulated("mi300x")
