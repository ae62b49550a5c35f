"""The run's children: which processes a script starts are the run's Python children (and which
are a library's machinery, or cannot be followed), and the environment that makes a fresh
interpreter emulate the same device and record into the run's folder: the variables, and a
``sitecustomize`` first on its ``PYTHONPATH`` that starts :func:`tilefit._processes.start_child`.
"""

from __future__ import annotations

import os
import sys

from tilefit import _audit, _lifetime, _state
from tilefit._patches import REGISTRY

#: What a child process reads to emulate the same device and record into the same run.
ENV_DEVICE = "TILEFIT_CAPTURE_DEVICE"
ENV_CHILDREN = "TILEFIT_CAPTURE_CHILDREN"
ENV_ROOTS = "TILEFIT_CAPTURE_ROOTS"
#: The run's ``sitecustomize`` folder, for children whose environment the script rebuilt.
ENV_SITE = "TILEFIT_CAPTURE_SITE"
#: The call (under pytest, the test) that was running when a child was started.
ENV_CALL = "TILEFIT_CAPTURE_CALL"
#: The folder of the run's start slots (:func:`_start_slot`).
ENV_SLOTS = "TILEFIT_CAPTURE_SLOTS"
#: The run's mark: tilefit's pid, then the run's own digits (``guests.rs``).
ENV_MARK = _lifetime.ENV_MARK

#: Python processes that are the machinery of a library, not the user's code: they get no
#: emulation (multiprocessing's resource tracker, Inductor's compile workers).
MACHINERY = (b"multiprocessing.resource_tracker", b"compile_worker")

#: multiprocessing's fork server: emulated (the processes it forks inherit the emulation) but not
#: a child of its own (it launches nothing; what it forks are).
SERVER = b"multiprocessing.forkserver"

#: The ``sitecustomize`` module a child interpreter imports at start-up: the emulation first, then
#: the environment's own ``sitecustomize``, if it has one.
_SITECUSTOMIZE = '''"""tilefit capture: a child process of the captured run gets the same emulated device."""
import os as _os

if _os.environ.get("TILEFIT_CAPTURE_CHILDREN"):
    from tilefit import _processes as _tilefit_processes

    _tilefit_processes.start_child()


def _theirs():
    import importlib.machinery
    import importlib.util
    import sys

    here = _os.path.dirname(_os.path.abspath(__file__))
    path = [p for p in sys.path if _os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_theirs()
'''


def child_environment(device_file, children, roots, scratch):
    """Set this process's environment so the Python children it starts emulate the same device and
    record into ``children``: the variables, and a ``sitecustomize`` folder first on
    ``PYTHONPATH``."""
    os.makedirs(children, exist_ok=True)
    site = os.path.join(scratch, f"site-{os.getpid()}")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "sitecustomize.py"), "w", encoding="utf-8") as out:
        out.write(_SITECUSTOMIZE)
    slots = os.path.join(scratch, "slots")
    os.makedirs(slots, exist_ok=True)
    existing = os.environ.get("PYTHONPATH")
    why = "a Python child emulates the same device and records into the run's folder"
    for name, value in (
        (ENV_DEVICE, os.path.abspath(device_file)),
        (ENV_CHILDREN, os.path.abspath(children)),
        (ENV_ROOTS, os.pathsep.join(roots)),
        (ENV_SITE, site),
        (ENV_SLOTS, slots),
        ("PYTHONPATH", site + (os.pathsep + existing if existing else "")),
    ):
        REGISTRY.set_item(os.environ, name, value, why, where="os.environ")


#: The interpreter flags that keep a child from reading ``sitecustomize`` (isolated mode, no
#: environment, no ``site``): such a child runs without the emulation.
_UNFOLLOWED_FLAGS = ("I", "E", "S")


def python_child(args, executable):
    """``(name, followed)`` for a ``subprocess`` child that is this interpreter (not a library's
    machinery): ``followed`` is False when its flags keep it from the emulation (``-I``, ``-E``,
    ``-S``). None for any other program."""
    if isinstance(args, (str, bytes)) or not args:
        return None
    args = [os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args]
    program = os.fsdecode(executable) if executable else args[0]
    try:
        same = os.path.realpath(program) == os.path.realpath(sys.executable)
    except (OSError, ValueError):
        same = False
    if not same:
        return None
    if any(part in a.encode() for a in args for part in MACHINERY):
        return None
    followed = True
    rest = args[1:]
    while rest and rest[0].startswith("-") and rest[0] not in ("-c", "-m"):
        flags = rest[0]
        if not flags.startswith("--") and any(
            f in flags[1:] for f in _UNFOLLOWED_FLAGS
        ):
            followed = False
        # Flags that take a value (`-W x`, `-X y`) keep it in the next word.
        rest = rest[2:] if flags in ("-W", "-X", "-Q") else rest[1:]
    if not rest:
        name = "python"
    elif rest[0] == "-c":
        code = (
            rest[1].strip().splitlines()[0] if len(rest) > 1 and rest[1].strip() else ""
        )
        name = f"python -c {code[:40]!r}" if code else "python -c"
    elif rest[0] == "-m":
        name = f"python -m {rest[1]}" if len(rest) > 1 else "python -m"
    else:
        name = "python " + os.path.basename(rest[0])
    return name, followed


def followed_environment(env):
    """``env`` (a child's own environment, or None for this process's) with the run's variables
    and its ``sitecustomize`` folder first on ``PYTHONPATH``, so the child emulates what this
    process emulates even where the script rebuilt its environment. The folders it may write to
    are the run's, whatever the script put in its environment or in this process's."""
    allowed = _state.RUN.writable
    if env is None:
        if allowed is None or os.environ.get(_audit.ENV_WRITABLE) == allowed:
            return None
        env = os.environ
    env = dict(env)
    if allowed is not None:
        env[_audit.ENV_WRITABLE] = allowed
    for key in (
        ENV_DEVICE,
        ENV_CHILDREN,
        ENV_ROOTS,
        ENV_SITE,
        ENV_CALL,
        ENV_MARK,
        "TILEFIT_CAPTURE_EVENTS",
    ):
        if key in os.environ and key not in env:
            env[key] = os.environ[key]
    site = os.environ.get(ENV_SITE)
    if site:
        parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if site not in parts:
            env["PYTHONPATH"] = os.pathsep.join([site, *parts])
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package not in parts:
        env["PYTHONPATH"] = os.pathsep.join([*parts, package])
    return env
