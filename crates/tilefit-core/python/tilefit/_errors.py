"""The errors the package raises: each says what was asked, what was missing and the fix."""


class TilefitError(Exception):
    """Base of every error tilefit's Python package raises."""


class UnknownDevice(TilefitError, ValueError):
    """A device was named that neither the export nor the arch syntax knows."""


class NotProbed(TilefitError, LookupError):
    """The device's arch (or the variant) is not in the offline export."""


class NoConfigFits(TilefitError):
    """No candidate fits the device: every one was over its budget or did not compile."""

    def __init__(self, message, rejected=()):
        super().__init__(message)
        #: The :class:`tilefit.Rejection` of each candidate, in the order tried.
        self.rejected = list(rejected)


class NoDevice(TilefitError, RuntimeError):
    """No CUDA/HIP device is visible here (a CI runner, a laptop): the question needs a device
    named instead, or a fallback."""


class BadExport(TilefitError, ValueError):
    """A file that is not a well-formed ``--emit-configs`` export: names the file and the field."""
