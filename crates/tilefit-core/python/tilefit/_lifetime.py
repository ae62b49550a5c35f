"""A capture's processes end with tilefit, however tilefit ends (SIGKILL too). Each process of
the run carries the run's mark (``TILEFIT_CAPTURE_RUN=<tilefit pid>.<n>.<random>``) in its
environment; an emulated Python child watches tilefit through a pidfd and, when tilefit is gone,
kills the run's other marked processes and then itself.
"""

import _thread
import os
import select
import signal

#: The variable that marks a process as one of the run's.
ENV_MARK = "TILEFIT_CAPTURE_RUN"


def _marked(pid, needle):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return needle in f.read().split(b"\0")
    except OSError:
        return False


def end_marked(mark):
    """SIGKILL every other process of this user that carries the run's mark."""
    needle = f"{ENV_MARK}={mark}".encode()
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me or not _marked(name, needle):
            continue
        try:
            fd = os.pidfd_open(int(name))
        except OSError:
            continue
        try:
            # Held now: still the process that was found, not one that took its pid.
            if _marked(name, needle):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(fd)


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
