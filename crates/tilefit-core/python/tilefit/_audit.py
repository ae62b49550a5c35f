"""Writes the script makes outside its capture's folders, seen through Python's audit hooks
(PEP 578): opening a file for writing, making, renaming, removing or linking one, opening an SQLite
database. A capture runs the script with a home, caches and a temp dir of its own in its scratch
(``tilefit capture`` sets them); a write anywhere else (a path the script or an engine computed
before, an absolute path, the working folder) would leave a trace on the user's machine, so each
distinct path is recorded once as an error of the run, with the line that wrote it, and the run
fails. The folders the user allowed (``--allow-writes``) and the system's (``/dev``, ``/proc``)
are not traces. Writes made below Python (a C library's own ``fopen``, a program the script
starts) are not seen here.
"""

import os
import sys

#: Events that write, and how to read their paths: the argument positions that are written.
_EVENTS = {
    "open": (0,),
    "os.mkdir": (0,),
    "os.rename": (0, 1),
    "os.replace": (0, 1),
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.symlink": (1,),
    "os.link": (1,),
    "os.truncate": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.utime": (0,),
    "shutil.rmtree": (0,),
    "shutil.copyfile": (1,),
    "shutil.copytree": (1,),
    "shutil.move": (0, 1),
    "sqlite3.connect": (0,),
}

#: ``os.open`` flags that write.
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

#: The system's folders, never a trace.
_SYSTEM = ("/dev/", "/proc/", "/sys/")

#: The variable naming the folders (besides the scratch) writes may go to.
ENV_WRITABLE = "TILEFIT_CAPTURE_WRITABLE"


def _writes(event, args):
    """Whether an audit event writes (an ``open`` only in a writing mode)."""
    if event != "open":
        return True
    mode, flags = (args[1], args[2]) if len(args) > 2 else (None, 0)
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _path(value):
    """An audit argument as an absolute, normalized path, or None (a file descriptor, an
    in-memory database)."""
    if isinstance(value, int) or value is None:
        return None
    try:
        text = os.fsdecode(os.fspath(value))
    except TypeError:
        return None
    if not text or text == ":memory:" or text.startswith("file:"):
        return None
    return os.path.normpath(os.path.join(os.getcwd(), text))


class Audit:
    """The hook of one process: the roots writes may go to, and the paths already recorded."""

    def __init__(self, recorder, roots):
        self.recorder = recorder
        self.roots = [os.path.join(os.path.realpath(r), "") for r in roots if r]
        self.seen = set()

    def allowed(self, path):
        if path.startswith(_SYSTEM):
            return True
        # Links on the way resolved: a link in the scratch to a user's folder is not the scratch.
        real = os.path.join(
            os.path.realpath(os.path.dirname(path)), os.path.basename(path)
        )
        return any((real + os.sep).startswith(root) for root in self.roots)

    def __call__(self, event, args):
        positions = _EVENTS.get(event)
        if positions is None:
            return
        try:
            if not _writes(event, args):
                return
            for at in positions:
                path = _path(args[at]) if at < len(args) else None
                if path is None or path in self.seen or self.allowed(path):
                    continue
                self.seen.add(path)
                self.recorder.errors.append(
                    {
                        "call": self.recorder.current_call,
                        "error": f"the script wrote `{path}` ({event}) outside the capture's "
                        "scratch: a capture leaves the machine as it found it; pass "
                        "`--allow-writes DIR` if the script is meant to write there",
                        "traceback": "",
                        **self.recorder.place(),
                    }
                )
        except Exception:  # noqa: BLE001 (the hook never breaks the script's own call)
            pass


def install(recorder, scratch):
    """Record this process's writes outside ``scratch`` and the allowed folders (read from the
    environment, where the run put them)."""
    roots = [scratch, *os.environ.get(ENV_WRITABLE, "").split(os.pathsep)]
    sys.addaudithook(Audit(recorder, roots))
