"""One run's state: what a process's emulated run holds while it runs, in one object,
:data:`RUN`, instead of module globals. A run starts with a fresh one (:func:`begin`, which
``_emulation.install`` calls), made through the patch registry, so restoring the registry gives
back the state from before the run, and nothing of one run is seen by the next (the Python half's
own tests install and restore many runs in one process). Caches that hold no run's data (the
names of a C++ node type's saved tensors) stay where they are used.
"""

from __future__ import annotations

import sys
import weakref

from tilefit._patches import REGISTRY


class Run:
    """The state of one emulated run in this process."""

    def __init__(self):
        #: The process's ``Emulation`` (``_emulation.install``): the device it answers as.
        self.emulation = None
        #: The ``Recorder`` the launch patches record into (``_capture.install``).
        self.recorder = None
        #: Where this process writes its records at its end (``_processes.install``).
        self.records = None
        #: Called with each exception that stops host code, where it is raised.
        self.on_stop = []
        #: Called with each value host code reads that is not computed:
        #: ``(kind, what, value, frame)``.
        self.on_value = []
        #: The FakeTensor mode whose ops ``_values`` follows.
        self.mode = None
        #: ``_values``: per shadow, the key of its tensor as last followed.
        self.shadows = {}
        #: ``_values``: the device generator's state, and whether the CPU's random numbers are
        #: still the device's.
        self.seeds = {"device": None, "cpu_exact": True}
        #: Folders of the user's own code (each ending with the separator): a launch's place is
        #: the innermost frame there.
        self.user_roots = []
        #: Under pytest: which of the suite's tests this process runs, where its progress goes,
        #: how many it has done and selected (a split run).
        self.tests = None
        self.progress = None
        self.done = 0
        self.selected = None
        #: The folders the run's writes may go to, for the children this process starts.
        self.writable = None
        #: ``_generated``: the max-autotune selections being judged, innermost last.
        self.selections = []
        #: ``_autograd``: the backward passes in progress, innermost last, and the non-leaf
        #: tensors ``retain_grad`` was called on.
        self.tasks = []
        self.retained = weakref.WeakSet()


#: This process's run: a fresh :class:`Run` from :func:`begin` on.
RUN = Run()


def begin():
    """A fresh state for the run that starts now; the registry's restore brings back the one
    before."""
    REGISTRY.replace(
        sys.modules[__name__],
        "RUN",
        Run(),
        "a run's state starts empty, and the state before it comes back at restore",
    )
    return sys.modules[__name__].RUN
