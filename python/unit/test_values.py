"""``tilefit._values``: what host code reads from tensors under the emulation. A value computed
from known data is exact; one computed from data the emulation cannot know (random numbers
drawn on the device, memory never written) is an assumption, reported with its reason; a check
of FakeTensors is passed over and reported."""

from tilefit import _state, _values


def _reads():
    got = []
    _state.RUN.on_value.append(
        lambda kind, what, value, frame: got.append((kind, what, value))
    )
    return got


def test_a_value_computed_from_known_data_is_exact_and_not_reported(emulated):
    emulated("h100")
    import torch

    got = _reads()
    counts = torch.arange(4, device="cuda")
    assert type(counts).__name__ == "FakeTensor"
    assert counts.sum().item() == 6
    assert (counts * 2).tolist() == [0, 2, 4, 6]
    assert got == []


def test_random_numbers_are_the_cpu_generator_s_and_assumed(emulated):
    emulated("h100")
    import torch

    got = _reads()
    torch.manual_seed(0)
    device = torch.randn(3, device="cuda").tolist()
    torch.manual_seed(0)
    assert device == torch.randn(3).tolist()
    assert [kind for kind, _, _ in got] == ["assumed"] * 3
    assert "random numbers drawn on the device" in got[0][1]


def test_unseeded_device_numbers_are_the_same_in_every_run(emulated):
    """A script that never seeds draws from the device's generator as it starts (torch's default
    seed, as a CUDA generator's), so two runs give the same values and one report."""
    import torch

    from tilefit._patches import REGISTRY

    drawn = []
    for _ in range(2):
        emulated("h100")
        drawn.append(torch.randn(4, device="cuda").tolist())
        assert REGISTRY.restore() == []
    assert drawn[0] == drawn[1]
    generator = torch.Generator()
    generator.manual_seed(torch.Generator().initial_seed())
    assert drawn[0] == torch.randn(4, generator=generator).tolist()


def test_memory_never_written_reads_as_the_assumed_int(emulated):
    emulated("mi300x")
    import torch

    got = _reads()
    value = torch.empty(5, device="cuda", dtype=torch.int64).max().item()
    assert value == _values.ASSUMED_INT
    assert got[-1][0] == "assumed" and got[-1][2] == _values.ASSUMED_INT


def test_a_read_in_the_script_s_own_check_is_a_check_passed_over(emulated):
    emulated("h100")
    import torch

    got = _reads()
    unknown = torch.empty(3, device="cuda")
    reference = torch.empty(3, device="cuda")
    # A test's tolerance check of values nobody can know passes, and is reported as a check.
    assert (unknown - reference).abs().max().item() < 1e-3
    assert got[-1][0] == "check"


def test_a_check_of_fake_tensors_is_passed_over_and_reported(emulated):
    emulated("h100")
    import torch

    got = _reads()
    a = torch.randn(4, device="cuda")
    assert torch.testing.assert_close(a, a + 1) is None
    assert ("check", "torch.testing.assert_close", None) in got
