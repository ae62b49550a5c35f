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
