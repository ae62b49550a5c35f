"""``tilefit._inductor``: ``torch.compile``'s generated kernels under the emulation are recorded
as launches, compiled for the emulated device; Inductor's settings that would leave the process
are set while installed and put back after."""

from conftest import device

from tilefit import _capture, _inductor
from tilefit._patches import REGISTRY


def test_a_compiled_function_s_kernel_is_recorded_and_settings_restored(
    emulated, scratch
):
    import torch
    import torch._inductor.config as config

    threads = config.compile_threads
    emulation = emulated("h100")
    recorder = _capture.Recorder(device("h100"))
    _capture.install(recorder, emulation)
    _inductor.install(recorder, emulation)
    assert config.compile_threads == 1 and config.autotune_in_subproc is False

    @torch.compile
    def step(a, b):
        return (a * b).sin() + 1

    out = step(torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda"))
    assert out.shape == (1024,) and type(out).__name__ == "FakeTensor"
    kernels = {launch["kernel"]["function"] for launch in recorder.launches}
    assert kernels == {"triton_poi_fused_add_mul_sin_0"}
    assert all(launch["inductor"] for launch in recorder.launches)
    assert REGISTRY.restore() == []
    assert config.compile_threads == threads
    torch._dynamo.reset()
