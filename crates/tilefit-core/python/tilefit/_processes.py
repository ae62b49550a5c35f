"""Every thread and process of a captured run, under the same emulation and into the same report.

- **Threads.** torch's dispatch modes are per thread, so a thread the script starts (``threading``,
  ``concurrent.futures``, a library's) would see no FakeTensor mode and reach for a driver: every
  ``threading.Thread`` enters the run's mode as it starts. An error that ends a thread is recorded
  with the thread's name (a stop or a script error), and the run's records are written only after
  Python has joined the threads still running when the script body returns (at exit, as the
  interpreter does).
- **Child processes.** A ``fork`` child (``multiprocessing``, ``os.fork``) inherits the emulation
  and keeps recording into a records file of its own; a fresh interpreter (a ``spawn`` or
  ``forkserver`` process, ``subprocess`` running ``sys.executable``) installs the same emulation
  before anything else runs, through a ``sitecustomize`` module first on its ``PYTHONPATH``
  (:func:`_children.child_environment`). Each child writes a start marker and, when it ends, its records,
  into the run's children folder; ``tilefit capture`` joins them to the target's report with the
  process named, and a marker without records (a child killed, or ended by ``os._exit`` before
  tilefit could write) fails the run closed, naming the child.

- **Their end.** Every process of the run carries the run's mark (``TILEFIT_CAPTURE_RUN``, in
  the environment the script gave a ``subprocess`` child too); ``tilefit capture`` ends the ones
  that do when the run ends, in a new session or not. Should tilefit itself be killed, the script
  gets SIGKILL from the system, and each Python child, watching tilefit's pid, ends the run's
  processes and itself (:func:`tilefit._lifetime.end_with_tilefit`).

The folder's files: ``child-PID.started`` (JSON: the child's name and kind) and
``child-PID.json`` (the records, as the main process writes its own).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import threading

from tilefit import _audit, _capture, _children, _lifetime, _state, _system
from tilefit._patches import REGISTRY


class _Run:
    """This process's part of the run: its recorder, where its records go, and whether they were
    written (a process writes once, at its end)."""

    def __init__(self, recorder, out):
        self.recorder = recorder
        self.out = out
        self.pid = os.getpid()
        self.written = False
        self.marked = False
        self.lock = threading.Lock()
        self.sign = None


def _children_folder():
    return os.environ.get(_children.ENV_CHILDREN)


def _mark(name, kind, pid=None):
    """A child's start marker: a child that leaves it and no records fails the run, named.
    Written by the child itself, or by its parent as it starts it (``pid``)."""
    run = _state.RUN.records
    folder = _children_folder()
    if run is None or folder is None:
        return
    if pid is None:
        if run.marked:
            return
        run.marked = True
        pid = os.getpid()
        if os.path.exists(os.path.join(folder, f"child-{pid}.started")):
            # Its parent named it as it started it.
            return
    path = os.path.join(folder, f"child-{pid}.started")
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps({"name": name, "kind": kind}) + "\n")


def _install_subprocess():
    """A Python child started with ``subprocess`` emulates the same device, whatever environment
    the script gave it, and is marked as it starts: killed before it could write anything, it
    still fails the run, named. One started so that it cannot emulate (``-I``) is marked as not
    followed, which fails the run: what it launches cannot be seen. Its exit status is written
    beside its records when the script collects it."""
    import subprocess

    real = subprocess.Popen.__init__
    if getattr(real, "_tilefit", False):
        return

    def __init__(self, args, *rest, **kwargs):
        child = None
        args, kwargs = _system.to_stand_in(args, kwargs)
        try:
            child = _children.python_child(args, kwargs.get("executable"))
            if child is not None and child[1] and not rest:
                kwargs["env"] = _children.followed_environment(kwargs.get("env"))
            elif kwargs.get("env") is not None and _children.ENV_MARK in os.environ:
                # Any program: it carries the run's mark, so it ends with the run.
                kwargs["env"] = {
                    **kwargs["env"],
                    _children.ENV_MARK: os.environ[_children.ENV_MARK],
                }
        except Exception:  # noqa: BLE001 (the child runs as the script asked)
            child = None
        real(self, args, *rest, **kwargs)
        if child is not None and getattr(self, "pid", None):
            name, followed = child
            _mark(name, "subprocess" if followed else "not-followed", pid=self.pid)
            self._tilefit_child = True

    __init__._tilefit = True
    REGISTRY.replace(
        subprocess.Popen,
        "__init__",
        __init__,
        "a Python child emulates the same device and is marked as it starts",
    )
    handle = getattr(subprocess.Popen, "_handle_exitstatus", None)
    if handle is None:
        return

    def _handle_exitstatus(self, *args, **kwargs):
        result = handle(self, *args, **kwargs)
        folder = _children_folder()
        if (
            getattr(self, "_tilefit_child", False)
            and folder
            and self.returncode is not None
        ):
            try:
                with open(
                    os.path.join(folder, f"child-{self.pid}.exit"),
                    "w",
                    encoding="utf-8",
                ) as out:
                    out.write(f"{int(self.returncode)}\n")
            except OSError:
                pass
        return result

    REGISTRY.replace(
        subprocess.Popen,
        "_handle_exitstatus",
        _handle_exitstatus,
        "a child's exit status is written beside its records",
    )


def write_records():
    """Write this process's records once: the main process's to the file ``tilefit capture``
    reads, a child's into the children folder."""
    run = _state.RUN.records
    if run is None:
        return
    with run.lock:
        if run.written:
            return
        run.written = True
        if run.out is not None and os.getpid() == run.pid:
            run.recorder.write(run.out)
            run.sign(run.out)
            return
        folder = _children_folder()
        if folder is None:
            return
        if not run.marked:
            # A fork that made no record and wrote no marker (say, one that exec'd a program):
            # nothing of it to join.
            if not (
                run.recorder.launches or run.recorder.stopped or run.recorder.errors
            ):
                return
            _mark(run.recorder.process_name, run.recorder.process_kind)
        path = os.path.join(folder, f"child-{os.getpid()}.json")
        run.recorder.write(path + ".part")
        os.replace(path + ".part", path)


def _at_exit():
    """The end of the run: multiprocessing's children joined (its own exit handler, which
    terminates daemonic ones), then the records written. Python has already joined the threads
    still running when the script body returned."""
    if "multiprocessing.util" in sys.modules:
        try:
            sys.modules["multiprocessing.util"]._exit_function()
        except Exception as error:  # noqa: BLE001 (a child that cannot be joined is the report's)
            _state.RUN.records.recorder.raised(error)
    write_records()
    if (
        _state.RUN.records is not None
        and _state.RUN.records.out is not None
        and os.getpid() == _state.RUN.records.pid
    ):
        _lifetime.end_adopted()


def _enter_mode(mode):
    """Make ``mode`` (the run's FakeTensor mode) this thread's, as it is the main thread's."""
    import torch

    key = torch._C._TorchDispatchModeKey.FAKE
    if torch._C._get_dispatch_mode(key) is None:
        mode.__enter__()


def _leave_mode():
    """Take the mode off this thread's dispatch state while Python still holds it: the state's
    own destructor at the thread's end would drop a Python object after the interpreter may have
    begun to finalize (an abort at exit)."""
    import torch

    try:
        torch._C._unset_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)
    except Exception:  # noqa: BLE001 (nothing set: nothing to take off)
        pass


def _install_threads(recorder, mode):
    real = threading.Thread._bootstrap_inner

    def _bootstrap_inner(self):
        try:
            _enter_mode(mode)
        except Exception as error:  # noqa: BLE001 (the thread runs, and the report says why it could not be emulated)
            recorder.raised(error, thread=self.name)
        try:
            return real(self)
        finally:
            _leave_mode()

    REGISTRY.replace(
        threading.Thread,
        "_bootstrap_inner",
        _bootstrap_inner,
        "each thread runs in the emulation's FakeTensor mode",
    )
    previous = threading.excepthook

    def excepthook(args):
        if args.exc_type is not SystemExit and args.exc_value is not None:
            name = args.thread.name if args.thread is not None else None
            recorder.raised(args.exc_value, thread=name)
        return previous(args)

    REGISTRY.replace(
        threading,
        "excepthook",
        excepthook,
        "the error that ends a thread is recorded",
    )


def _start_method(process):
    method = getattr(process, "_start_method", None)
    if method:
        return method
    import multiprocessing

    return multiprocessing.get_start_method(allow_none=True) or "fork"


def _recording(recorder, fn):
    """``fn``, with the error that ends it recorded before it goes on (to a child's bootstrap,
    which prints it and exits 1, or to torch's rank wrapper, which hands it to the parent)."""

    def recorded(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            recorder.raised(error)
            raise

    return recorded


def _install_multiprocessing(recorder):
    """A ``multiprocessing`` child names itself, records its errors and writes its records at the
    end of its bootstrap (a forked child leaves with ``os._exit``, which runs no exit handler)."""
    from multiprocessing import process

    real = process.BaseProcess._bootstrap
    if getattr(real, "_tilefit", False):
        return

    def _bootstrap(self, *args, **kwargs):
        recorder.become_child(self.name, _start_method(self), forked=False)
        _mark(recorder.process_name, recorder.process_kind)
        self.run = _recording(recorder, self.run)
        code = 1
        try:
            code = real(self, *args, **kwargs)
        finally:
            recorder.exit = code
            write_records()
        return code

    _bootstrap._tilefit = True
    REGISTRY.replace(
        process.BaseProcess,
        "_bootstrap",
        _bootstrap,
        "a multiprocessing child names itself, records its errors and writes its records",
    )


def _install_torch_spawn(recorder):
    """A ``torch.multiprocessing.spawn`` rank catches its own error (to hand it to the parent) and
    exits 1: the error is recorded first, as a ``multiprocessing`` child's is."""
    import importlib

    try:
        # The module: `torch.multiprocessing.spawn` the attribute is its function.
        spawn = importlib.import_module("torch.multiprocessing.spawn")
    except ImportError:
        return
    real = getattr(spawn, "_wrap", None)
    if real is None or getattr(real, "_tilefit", False):
        return

    def _wrap(fn, i, args, error_file):
        return real(_recording(recorder, fn), i, args, error_file)

    _wrap._tilefit = True
    _wrap.__module__ = real.__module__
    _wrap.__qualname__ = real.__qualname__
    REGISTRY.replace(
        spawn,
        "_wrap",
        _wrap,
        "a torch.multiprocessing.spawn rank's error is recorded before it is handed on",
    )


def _on_terminate(recorder):
    """A child asked to end (``Process.terminate()``, and multiprocessing's exit handler for a
    daemonic one) writes what it recorded before it goes."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def handler(signum, _frame):
        recorder.exit = -signum
        write_records()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    try:
        REGISTRY.signal(
            signal.SIGTERM,
            handler,
            "a child asked to end writes what it recorded before it goes",
        )
    except ValueError:
        pass


def _write_before_os_exit(recorder):
    """``os._exit`` runs no exit handler: the records are written first."""
    real_exit = os._exit

    def _exit(code):
        recorder.exit = code
        write_records()
        real_exit(code)

    REGISTRY.replace(
        os,
        "_exit",
        _exit,
        "os._exit runs no exit handler: the records are written first",
    )


def _after_fork_in_child():
    run = _state.RUN.records
    if run is None or not REGISTRY.active():
        return
    run.written = False
    run.marked = False
    run.lock = threading.Lock()
    run.recorder.become_child(f"fork of {run.recorder.process_name}", "fork")
    _lifetime.end_with_tilefit()
    _write_before_os_exit(run.recorder)
    _on_terminate(run.recorder)


def _signer(key):
    """A function that signs a records file with ``key`` (HMAC-SHA-256 of its bytes, in a
    ``.sig`` file beside it): ``tilefit capture`` reads only records its recorder wrote. The key
    stays in this closure, not in the environment."""
    import hmac

    secret = key.encode()

    def sign(path):
        with open(path, "rb") as f:
            digest = hmac.new(secret, f.read(), "sha256").hexdigest()
        with open(path + ".sig", "w", encoding="utf-8") as out:
            out.write(digest + "\n")

    return sign


def install(recorder, emulation, out=None, key=""):
    """Record every thread and child process of this process's run into ``recorder``, each thread
    in ``emulation``'s FakeTensor mode (the main process writes to ``out`` at exit, signed with
    ``key``; a child, into the children folder)."""
    run = _Run(recorder, out)
    run.sign = _signer(key)
    _state.RUN.records = run
    _install_threads(recorder, emulation.mode)
    _install_multiprocessing(recorder)
    _install_subprocess()
    _install_torch_spawn(recorder)
    os.register_at_fork(after_in_child=_after_fork_in_child)
    REGISTRY.permanent(
        "os.register_at_fork",
        "a forked child records under its own name and writes its records at its end",
    )
    atexit.register(_at_exit)
    REGISTRY.done(
        "atexit",
        "the records are written at the run's end",
        lambda: atexit.unregister(_at_exit),
    )


def _command():
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _machinery():
    command = _command()
    return any(part in command for part in _children.MACHINERY)


def _child_name():
    argv = list(sys.argv)
    if "--multiprocessing-fork" in argv:
        return None
    if argv and argv[0] == "-c":
        return "python -c"
    if argv and argv[0] == "-m":
        return "python -m"
    if argv and argv[0]:
        return "python " + os.path.basename(argv[0])
    return "python"


def _start_slot():
    """One of the run's start slots, as many as this machine has cores: a fresh interpreter of
    the run holds one while it imports torch and installs the emulation (no code of the script
    runs then), so a test that starts eight workers at once on two cores starts them two at a
    time. Each start then gets a core instead of a share of every core, and the workers of a
    pool that ends at its first failure (``torch.multiprocessing.spawn``) are ended before they
    start rather than halfway through. A slot is an ``flock`` on a file: the system lets it go
    when its holder ends, however it ends. None where slots are not set up or cannot be taken."""
    folder = os.environ.get(_children.ENV_SLOTS)
    if not folder:
        return None
    try:
        import fcntl

        cores = len(os.sched_getaffinity(0))
    except (ImportError, AttributeError, OSError):
        return None
    opened = []
    try:
        for i in range(cores):
            fd = os.open(
                os.path.join(folder, f"slot-{i}"), os.O_RDWR | os.O_CREAT, 0o600
            )
            opened.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
            opened.remove(fd)
            return fd
        # Every slot is held: wait for one (which one, by this process's id).
        fd = opened.pop(os.getpid() % len(opened))
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd
    except OSError:
        return None
    finally:
        for fd in opened:
            os.close(fd)


def start_child():
    """A fresh interpreter of the run (``sitecustomize`` calls this before anything else runs):
    the same device emulated, every launch recorded, the records written at its end."""
    if _state.RUN.records is None:
        _lifetime.end_with_tilefit()
    if _state.RUN.records is not None or _machinery():
        return
    device_file = os.environ.get(_children.ENV_DEVICE)
    if not device_file:
        return
    slot = _start_slot()
    try:
        try:
            import torch  # noqa: F401
        except ImportError:
            # A Python without torch launches no kernel: it runs as it is.
            return
        with open(device_file, encoding="utf-8") as f:
            device = json.load(f)
        from tilefit import _emulation, _inductor, _system

        emulation = _emulation.install(device)
        _system.install_libraries(device)
    finally:
        if slot is not None:
            os.close(slot)
    recorder = _capture.Recorder(device)
    _capture.install(recorder, emulation)
    _inductor.install(recorder, emulation)
    slots = os.environ.get(_children.ENV_SLOTS)
    if slots:
        _audit.install(recorder, os.path.dirname(slots))
    roots = os.environ.get(_children.ENV_ROOTS, "")
    for root in roots.split(os.pathsep):
        if root:
            _capture.add_user_root(root)
    recorder.become_child("python", "subprocess", forked=False)
    recorder.begin_call(os.environ.get(_children.ENV_CALL) or "child process")
    install(recorder, emulation)
    _on_terminate(recorder)
    if _children.SERVER in _command():
        recorder.become_child("forkserver", "forkserver", forked=False)
        return
    if "--multiprocessing-fork" not in sys.argv:
        _mark(_child_name(), "subprocess")
        recorder.become_child(_child_name(), "subprocess", forked=False)
        previous = sys.excepthook

        def excepthook(kind, value, tb):
            if kind is not SystemExit:
                recorder.raised(value)
                recorder.exit = 1
            return previous(kind, value, tb)

        REGISTRY.replace(
            sys, "excepthook", excepthook, "the error that ends a child is recorded"
        )
        _write_before_os_exit(recorder)
        # Its end is reached when its exit handlers run; the status its parent collects (a
        # `sys.exit(3)`) is written beside its records by the parent.
        recorder.exit = 0
