"""``tilefit._system``: the vendor tools and libraries a script asks about the GPU answer for the
emulated device, from the table, and say so where the table has no value."""

import os
import shutil
import subprocess

from conftest import device, device_file

from tilefit import _system
from tilefit._patches import REGISTRY


def _tools(name, scratch):
    _system.write_tools(device(name), os.path.join(scratch, "bin"), device_file(name))


def test_nvidia_smi_answers_for_the_device_and_names_what_the_table_lacks(scratch):
    try:
        _tools("h100", scratch)
        assert shutil.which("nvidia-smi").startswith(scratch)
        asked = ["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"]
        run = subprocess.run(asked, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == "NVIDIA H100 80GB HBM3, 9.0"
        lacking = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.total", "--format=csv"],
            capture_output=True,
            text=True,
        )
        assert lacking.returncode != 0
        assert "no `memory.total` for h100" in lacking.stderr
    finally:
        assert REGISTRY.restore() == []
    assert not (shutil.which("nvidia-smi") or "").startswith(scratch)


def test_nvml_answers_for_a_cuda_device_and_is_absent_on_an_amd_one():
    import pynvml

    _system.install_libraries(device("rtx-pro-6000"))
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        assert pynvml.nvmlDeviceGetCount() == 1
        assert pynvml.nvmlDeviceGetName(handle) == device("rtx-pro-6000")["name"]
        assert pynvml.nvmlDeviceGetCudaComputeCapability(handle) == (12, 0)
    finally:
        assert REGISTRY.restore() == []
    _system.install_libraries(device("mi300x"))
    try:
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError:
            pass
        else:
            raise AssertionError("NVML answered on an AMD device")
    finally:
        assert REGISTRY.restore() == []
