"""Not collected with the suite (its name is not test_*): a test that fails with Triton's own
OutOfResources, as a launch on a small part does. The plugin appends tilefit explain's reading to
its report; the plugin's test runs this file on its own."""

from triton.runtime.errors import OutOfResources


def test_a_launch_over_the_budget():
    raise OutOfResources(102400, 101376, "shared memory")
