"""The Python half's own tests: its modules tested without the binary, with the real torch and
Triton of the emulation's Python (``crates/tilefit/tests/cli/emulation_units.rs`` runs them in
CI). The emulated devices are the ones the Rust half writes (``devices/``, kept equal to it by
``crates/tilefit-core/tests/core/contract.rs``)."""

import json
import os
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE)))


def device(name):
    """The emulated device the Rust half hands a capture for ``name``."""
    with open(os.path.join(HERE, "devices", f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


def device_file(name):
    return os.path.join(HERE, "devices", f"{name}.json")


@pytest.fixture
def scratch():
    """A folder of the test's own, removed after it (pytest's tmp_path is kept)."""
    with tempfile.TemporaryDirectory(prefix="unit-") as folder:
        yield folder


@pytest.fixture
def emulated():
    """Install the emulation of a device in this process (``emulated("h100")``), and restore every
    patch after the test through the registry."""
    from tilefit import _emulation
    from tilefit._patches import REGISTRY

    def install(name):
        return _emulation.install(device(name))

    yield install
    failed = REGISTRY.restore()
    assert failed == []
    assert _emulation.installed() is None
