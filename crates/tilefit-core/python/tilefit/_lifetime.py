"""A capture's processes end with tilefit, however tilefit ends (SIGKILL too). Each process of
the run carries the run's mark (``TILEFIT_CAPTURE_RUN=<tilefit pid>.<n>.<random>``) in its
environment; an emulated Python child watches tilefit through a pidfd and, when tilefit is gone,
kills the run's other marked processes and then itself.
"""

import _thread
import os
import select
import signal

from tilefit._patches import REGISTRY

#: The variable that marks a process as one of the run's.
ENV_MARK = "TILEFIT_CAPTURE_RUN"


def _marked(pid, needle):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return needle in f.read().split(b"\0")
    except OSError:
        return False


def _kill(pid, still=lambda: True):
    """SIGKILL ``pid`` through a pidfd, if ``still`` holds once the process is held (so a pid
    taken by another process since it was found is never signalled)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if still():
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(fd)


def end_marked(mark):
    """SIGKILL every other process of this user that carries the run's mark."""
    needle = f"{ENV_MARK}={mark}".encode()
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me or not _marked(name, needle):
            continue
        # Held now: still the process that was found, not one that took its pid.
        _kill(int(name), lambda name=name: _marked(name, needle))


def end_with_tilefit():
    """This process ends when tilefit does, however it ends (SIGKILL too), and takes the run's
    other processes with it: a thread of its own (not a ``threading.Thread``, which the script
    would see) waits on a pidfd of tilefit. The script itself needs none: the system sends it
    SIGKILL when tilefit dies (its parent-death signal, which its children do not inherit)."""
    mark = os.environ.get(ENV_MARK, "")
    try:
        tilefit = int(mark.split(".", 1)[0])
    except ValueError:
        return
    if tilefit == os.getppid():
        return  # the script: it has its parent-death signal

    def watch(fd):
        try:
            if fd is not None:
                select.select([fd], [], [])
        except (OSError, ValueError):
            return
        end_marked(mark)
        os.kill(os.getpid(), signal.SIGKILL)

    try:
        fd = os.pidfd_open(tilefit)
    except ProcessLookupError:
        fd = None  # tilefit is gone already
    except (AttributeError, OSError):
        return
    _thread.start_new_thread(watch, (fd,))


def adopt_orphans():
    """Make this process (the run's main Python) the child subreaper of what the script starts:
    a process that leaves the script's tree (a double fork, ``setsid -f``) and drops the run's
    mark (``env -i``) is reparented here, where :func:`end_adopted` finds it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return
    REGISTRY.done(
        "prctl(PR_SET_CHILD_SUBREAPER)",
        "what leaves the script's tree is reparented here and ended at exit",
        lambda: libc.prctl(36, 0, 0, 0, 0),
    )


def _processes():
    """``{pid: (parent, session)}`` of every process this user can read."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            found[int(name)] = (int(fields[1]), int(fields[3]))
        except (OSError, ValueError, IndexError):
            continue
    return found


def end_adopted():
    """SIGKILL what this process (the run's main Python) leaves running in another session at its
    end: orphans it adopted (:func:`adopt_orphans`), and its descendants in sessions of their own
    (a double fork whose middle process has not exited yet). Those of its own session
    (multiprocessing's resource tracker, which cleans up as this process ends) are left to end as
    they do, and tilefit ends its process group."""
    mine = os.getsid(0)
    table = _processes()
    children = {}
    for pid, (parent, _session) in table.items():
        children.setdefault(parent, []).append(pid)
    stack, doomed = [os.getpid()], []
    while stack:
        for child in children.get(stack.pop(), ()):
            stack.append(child)
            if table[child][1] != mine:
                doomed.append(child)
    for pid in doomed:
        _kill(pid)


def end_adopted_at_os_exit():
    """``os._exit`` in this (the run's main) process runs no exit handler: what it adopted is
    ended first (its records are not written, and the run fails closed on that)."""
    real_exit = os._exit
    main = os.getpid()

    def _exit(code):
        if os.getpid() == main:
            end_adopted()
        real_exit(code)

    REGISTRY.replace(
        os,
        "_exit",
        _exit,
        "os._exit runs no exit handler: what was adopted is ended first",
    )
