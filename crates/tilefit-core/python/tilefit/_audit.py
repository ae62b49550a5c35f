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
import stat
import sys
import traceback

from tilefit import _state
from tilefit._patches import REGISTRY

#: Events that write, and how to read their paths: each written argument's position, with the
#: position of the ``dir_fd`` it is relative to (None where the event carries none).
_EVENTS = {
    "open": ((0, None),),
    "os.mkdir": ((0, 2),),
    "os.rename": ((0, 2), (1, 3)),
    "os.replace": ((0, 2), (1, 3)),
    "os.remove": ((0, 1),),
    "os.rmdir": ((0, 1),),
    "os.symlink": ((1, 2),),
    "os.link": ((1, 3),),
    "os.truncate": ((0, None),),
    "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),),
    "os.utime": ((0, 3),),
    "os.setxattr": ((0, None),),
    "os.removexattr": ((0, None),),
    "shutil.rmtree": ((0, 1),),
    "shutil.copyfile": ((1, None),),
    "shutil.copytree": ((1, None),),
    "shutil.move": ((0, None), (1, None)),
    "sqlite3.connect": ((0, None),),
    "socket.bind": ((1, None),),
}

#: Events that change a name and not what it names: a hard link's other names keep their file.
_NAME_EVENTS = frozenset(
    ("os.remove", "os.rmdir", "os.rename", "os.replace", "shutil.rmtree", "shutil.move")
)

#: ``os.open`` flags that write.
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

#: Devices a write to changes nothing that stays.
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")

#: Names of this process's own descriptors: writing to its own pipe or terminal is output.
_OWN_FDS = ("/proc/self/fd/", "/dev/fd/", "/dev/stdout", "/dev/stderr", "/dev/stdin")

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


def _path(value, dir_fd=None, event=None):
    """An audit argument as an absolute, normalized path (relative to ``dir_fd``'s folder where
    the event carries one; a descriptor as what it is open on), or None (an in-memory database,
    an abstract socket, an address that is no path)."""
    if isinstance(value, int):
        if event == "open":
            return None  # `open(fd)`: a descriptor already open, no new file
        try:
            return os.readlink(f"/proc/self/fd/{value}")
        except OSError:
            return f"/proc/self/fd/{value}"
    if value is None:
        return None
    try:
        text = os.fsdecode(os.fspath(value))
    except TypeError:
        return None
    if event == "sqlite3.connect":
        if text in (":memory:", "") or text.startswith("file::memory:"):
            return None
        if text.startswith("file:"):
            text = text[len("file:") :].split("?", 1)[0]
    if not text or text.startswith("\0"):
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
    to create it (read-only, or exclusively) where one is, a removal of what is not there."""
    if event == "os.mkdir":
        return os.path.isdir(path)
    if event in ("os.remove", "os.rmdir"):
        return not os.path.lexists(path)
    if event == "open" and len(args) > 2:
        mode, flags = args[1], args[2]
        if isinstance(mode, str):
            return "x" in mode and os.path.lexists(path)
        writes = os.O_WRONLY | os.O_RDWR | os.O_TRUNC | os.O_APPEND
        exclusive = isinstance(flags, int) and flags & os.O_EXCL
        return isinstance(flags, int) and (
            (not flags & writes and os.path.exists(path))
            or (exclusive and os.path.lexists(path))
        )
    return False


def _own_stream(path):
    """Whether ``path`` names one of this process's descriptors open on a pipe, a socket or a
    terminal (its own output, which tilefit reads and escapes)."""
    if not path.startswith(_OWN_FDS):
        return False
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _leading(path):
    """Where ``path`` leads, said when a link takes it elsewhere."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return ""
    return f", leading to `{real}`" if real != path else ""


class Audit:
    """The hook of one process: the roots writes may go to, and the paths already recorded."""

    def __init__(self, recorder, roots):
        self.recorder = recorder
        self.roots = [os.path.join(os.path.realpath(r), "") for r in roots if r]
        self.seen = set()

    def allowed(self, path, event=None):
        if _own_stream(path):
            return True
        # Judged where it leads: every link on the way and at its end resolved (`/proc/self/root`,
        # `/dev/fd/N`, a link planted in the scratch, one to a file that is not there yet).
        real = os.path.realpath(path)
        if real in _DEVICES:
            return True
        if real.startswith(f"/dev/shm/pym-{os.getpid()}-"):
            # multiprocessing's shared `Value`/`Array` memory: a file it makes and unlinks at once.
            return True
        if not any((real + os.sep).startswith(root) for root in self.roots):
            return False
        # A file with another name elsewhere (a hard link made in the scratch) is not the
        # scratch's to write; removing or renaming the scratch's name leaves the file as it is
        # (filelock's probe links a file in a temp folder and removes both names).
        if event in _NAME_EVENTS:
            return True
        try:
            status = os.stat(real)
        except OSError:
            return True
        return not (stat.S_ISREG(status.st_mode) and status.st_nlink > 1)

    def outside(self, event, args):
        """The path outside the allowed folders that this event writes, or None."""
        if not _writes(event, args):
            return None
        for at, at_fd in _EVENTS[event]:
            if at >= len(args):
                continue
            dir_fd = args[at_fd] if at_fd is not None and at_fd < len(args) else None
            path = _path(args[at], dir_fd, event)
            if path is None or self.allowed(path, event):
                continue
            if _changes_nothing(event, args, path):
                continue
            return path
        return None

    def __call__(self, event, args):
        if event not in _EVENTS or not REGISTRY.active():
            return
        try:
            path = self.outside(event, args)
        except Exception as error:  # noqa: BLE001 (what cannot be judged is refused)
            path = f"{args[0]!r} (not judged: {type(error).__name__})"
        if path is None:
            return
        if path not in self.seen:
            self.seen.add(path)
            package = os.path.dirname(os.path.abspath(__file__)) + os.sep
            stack = [
                line
                for line in traceback.format_stack()[:-1]
                if package not in line and "<frozen runpy>" not in line
            ]
            self.recorder.errors.append(
                {
                    "call": self.recorder.current_call,
                    "error": f"tilefit refused a write outside the capture's scratch: `{path}` "
                    f"({event}{_leading(path)}); a capture leaves the machine as it found it: pass "
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


def install(recorder, scratch, *more):
    """Refuse and record this process's writes outside ``scratch`` and the allowed folders (read
    from the environment, where the run put them)."""
    writable = os.environ.get(ENV_WRITABLE, "")
    # The allowed folders, for the children this process starts.
    _state.RUN.writable = writable
    roots = [scratch, *more, *writable.split(os.pathsep)]
    sys.addaudithook(Audit(recorder, roots))
    REGISTRY.permanent(
        "sys.addaudithook",
        "a write outside the capture's scratch is refused and recorded",
    )
    _torch_save()


def _torch_save():
    """``torch.save(obj, PATH)`` writes its file from C++ (``PyTorchFileWriter``), where no audit
    event is raised: the path is put to the hook first, as Python's own ``open`` would."""
    serialization = sys.modules.get("torch.serialization")
    real = getattr(serialization, "_open_zipfile_writer", None)
    if real is None or getattr(real, "_tilefit", False):
        return

    def _open_zipfile_writer(name_or_buffer):
        if isinstance(name_or_buffer, (str, bytes, os.PathLike)):
            sys.audit(
                "open", name_or_buffer, "wb", os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            )
        return real(name_or_buffer)

    _open_zipfile_writer._tilefit = True
    REGISTRY.replace(
        serialization,
        "_open_zipfile_writer",
        _open_zipfile_writer,
        "torch.save writes from C++, where no audit event is raised",
    )
