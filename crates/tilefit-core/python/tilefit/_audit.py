"""Writes the script makes outside its capture's folders, seen through Python's audit hooks
(PEP 578) and refused: opening a file for writing, making, renaming, removing, truncating or
linking one, changing its mode or times, binding a socket to a path, opening an SQLite database.
A capture runs the script with a home, caches and a temp dir of its own in its scratch
(``tilefit capture`` sets them); a write anywhere else (a path the script or an engine computed
before, an absolute path, the working folder) would leave a trace on the user's machine, so it
raises ``PermissionError`` before anything changes, and each distinct path is recorded once as an
error of the run, with the lines that wrote it: the run fails. The folders the user allowed
(``--allow-writes``) and the system's (``/dev/null`` and the like, ``/proc``, ``/sys``; never
``/dev/shm``, which keeps what is written there) are not traces. A path is judged where it
leads: links on the way (``/proc/self/root``, ``/dev/fd/N``, a link planted in the scratch) are
resolved first. A call that changes nothing on disk (``os.makedirs(..., exist_ok=True)`` of a
folder that is there) is let through. Writes made below Python (a C library's own ``fopen``, a
program the script starts) are not seen here, nor an ``os.open`` relative to a ``dir_fd``
(Python's event does not carry it).
"""

import errno
import os
import sys
import traceback

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
    "socket.bind": (1,),
}

#: Where each event's ``dir_fd`` is, for the events that carry one.
_DIR_FD = {"os.mkdir": 2, "os.remove": 1, "os.rmdir": 1, "os.symlink": 2, "os.chmod": 2}

#: ``os.open`` flags that write.
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

#: The system's folders, never a trace (judged once links are resolved).
_SYSTEM = ("/dev/", "/proc/", "/sys/")

#: System folders that keep what is written: a trace like any other.
_KEEPS = ("/dev/shm/", "/dev/mqueue/")

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


def _path(value, dir_fd=None):
    """An audit argument as an absolute, normalized path (relative to ``dir_fd``'s folder where
    the event carries one), or None (a file descriptor, an in-memory database, an abstract
    socket)."""
    if isinstance(value, int) or value is None:
        return None
    try:
        text = os.fsdecode(os.fspath(value))
    except TypeError:
        return None
    if not text or text == ":memory:" or text.startswith(("file:", "\0")):
        return None
    base = os.getcwd()
    if isinstance(dir_fd, int) and dir_fd >= 0:
        try:
            base = os.readlink(f"/proc/self/fd/{dir_fd}")
        except OSError:
            base = f"/proc/self/fd/{dir_fd}"
    return os.path.normpath(os.path.join(base, text))


def _changes_nothing(event, args, path):
    """Whether a call would leave the disk as it is: a folder made where one is, a file opened
    to create it (read-only) where one is."""
    if event == "os.mkdir":
        return os.path.isdir(path)
    if event == "open" and len(args) > 2 and args[1] is None:
        flags = args[2]
        writes = os.O_WRONLY | os.O_RDWR | os.O_TRUNC | os.O_APPEND
        return isinstance(flags, int) and not flags & writes and os.path.exists(path)
    return False


class Audit:
    """The hook of one process: the roots writes may go to, and the paths already recorded."""

    def __init__(self, recorder, roots):
        self.recorder = recorder
        self.roots = [os.path.join(os.path.realpath(r), "") for r in roots if r]
        self.seen = set()

    def allowed(self, path):
        # Links on the way resolved: `/proc/self/root/...`, `/dev/fd/N/...` or a link in the
        # scratch to a user's folder lead elsewhere.
        real = os.path.join(
            os.path.realpath(os.path.dirname(path)), os.path.basename(path)
        )
        if real.startswith(_SYSTEM) and not real.startswith(_KEEPS):
            return True
        return any((real + os.sep).startswith(root) for root in self.roots)

    def outside(self, event, args):
        """The path outside the allowed folders that this event writes, or None."""
        positions = _EVENTS.get(event)
        if positions is None or not _writes(event, args):
            return None
        at_fd = _DIR_FD.get(event)
        dir_fd = args[at_fd] if at_fd is not None and at_fd < len(args) else None
        for at in positions:
            path = _path(args[at], dir_fd) if at < len(args) else None
            if path is None or self.allowed(path):
                continue
            if _changes_nothing(event, args, path):
                continue
            return path
        return None

    def __call__(self, event, args):
        if event not in _EVENTS:
            return
        try:
            path = self.outside(event, args)
        except Exception:  # noqa: BLE001 (a path the hook cannot read is the call's to refuse)
            return
        if path is None:
            return
        if path not in self.seen:
            self.seen.add(path)
            stack = [
                line
                for line in traceback.format_stack()[:-1]
                if f"{os.sep}tilefit{os.sep}" not in line
            ]
            self.recorder.errors.append(
                {
                    "call": self.recorder.current_call,
                    "error": f"tilefit refused a write outside the capture's scratch: `{path}` "
                    f"({event}); a capture leaves the machine as it found it: pass "
                    "`--allow-writes DIR` if the script is meant to write there",
                    "traceback": "".join(stack[-6:]),
                    **self.recorder.place(),
                }
            )
        raise PermissionError(
            errno.EACCES,
            "tilefit capture: writing outside the capture's scratch is refused "
            "(--allow-writes DIR allows a folder)",
            path,
        )


#: The allowed folders as the run gave them, for the environment of the children this process
#: starts (whatever environment the script gives them).
WRITABLE = None


def install(recorder, scratch):
    """Refuse and record this process's writes outside ``scratch`` and the allowed folders (read
    from the environment, where the run put them)."""
    global WRITABLE
    WRITABLE = os.environ.get(ENV_WRITABLE, "")
    roots = [scratch, *WRITABLE.split(os.pathsep)]
    sys.addaudithook(Audit(recorder, roots))
