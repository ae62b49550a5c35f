"""The process ``tilefit capture`` starts once per target: install the emulation of the target's
device, then run the user's script as ``__main__`` with every launch recorded, and write the
records as JSON.

    python -m tilefit._capture_main DEVICE.json RECORDS.json SCRIPT.py [ARGS...]
    python -m tilefit._capture_main DEVICE.json RECORDS.json -m MODULE [ARGS...]

The emulation is in place before the script (and so anything it imports) runs. A call that needs
what emulation lacks (real data, a value the table does not have) stops there: it is recorded with
its line and reason, not raised. Any other error of the script is recorded too, with its
traceback. The records are written at the process's exit (:mod:`tilefit._processes`), after
Python has joined the threads still running and multiprocessing its children; each child process
writes its own beside them.
"""

import json
import os
import runpy
import sys


def main(argv):
    if len(argv) < 3:
        print(
            "usage: python -m tilefit._capture_main DEVICE.json RECORDS.json SCRIPT.py [ARGS...]",
            file=sys.stderr,
        )
        return 2
    device_file, out, script, *args = argv
    module = None
    if script == "-m":
        if not args:
            print("tilefit capture: -m needs a module name", file=sys.stderr)
            return 2
        module, args = args[0], args[1:]
    with open(device_file, encoding="utf-8") as f:
        device = json.load(f)
    try:
        import torch  # noqa: F401
    except ImportError as error:
        print(
            f"tilefit capture: this Python ({sys.executable}) cannot import torch ({error}): "
            "install it with `pip install torch` (the CPU-only machine needs no GPU, only the "
            "package)",
            file=sys.stderr,
        )
        return 3
    from tilefit import (
        _audit,
        _capture,
        _children,
        _emulation,
        _inductor,
        _lifetime,
        _processes,
        _state,
        _system,
    )
    from tilefit._patches import REGISTRY

    emulation = _emulation.install(device)
    # The system's view too: the vendor tools first on PATH, NVML and amdsmi patched on import.
    scratch = os.path.dirname(os.path.abspath(out))
    try:
        _system.write_tools(
            device,
            os.path.join(scratch, f"bin-{os.getpid()}"),
            os.path.abspath(device_file),
        )
    except _system.StandInError as error:
        print(f"tilefit capture: {error}", file=sys.stderr)
        return 4
    _system.install_libraries(device)
    REGISTRY.set_item(
        os.environ,
        "TILEFIT_CAPTURE_EVENTS",
        os.path.abspath(out) + ".events",
        "tilefit.emulate.call's events go beside the records",
        where="os.environ",
    )
    # The tests of a suite this process runs, and where its progress goes (a split run): read
    # once here, so the script's own child processes never see them.
    run = _state.RUN
    run.tests = os.environ.pop("TILEFIT_CAPTURE_TESTS", None)
    run.progress = os.environ.pop("TILEFIT_CAPTURE_PROGRESS", None)
    key = _read_key()
    if module == "pytest" and run.tests is not None:
        args = _with_plugin(args)
    if module == "pytest" and "no:cacheprovider" not in args:
        # pytest's cache (`.pytest_cache` in the suite's root) would be a trace of the capture.
        args = ["-p", "no:cacheprovider", *args]
    recorder = _capture.Recorder(device)
    _capture.install(recorder, emulation)
    _inductor.install(recorder, emulation)
    recorder.begin_call(module or os.path.basename(script))
    code = 0
    folder = os.getcwd() if module else os.path.dirname(os.path.abspath(script))
    why = "the script runs as `python SCRIPT` or `python -m MODULE` would run it"
    REGISTRY.replace(sys, "argv", [module or script, *args], why)
    REGISTRY.insert(sys.path, 0, folder, why, where="sys.path")
    _capture.add_user_root(folder + os.sep)
    # Every thread and child process of the run: the records are written at exit, once Python
    # has joined the threads still running and multiprocessing its children.
    _children.child_environment(
        device_file, os.path.abspath(out) + ".d", run.user_roots, scratch
    )
    _processes.install(recorder, emulation, out=os.path.abspath(out), key=key)
    # What leaves the script's tree without the run's mark is reparented here, and ended at exit.
    _lifetime.adopt_orphans()
    _lifetime.end_adopted_at_os_exit()
    short = _short_temp()
    # From here on, a write outside the scratch (and the folders the user allowed) is an error.
    _audit.install(recorder, scratch, short)
    try:
        if module:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exit_:
        code = (
            exit_.code
            if isinstance(exit_.code, int)
            else (0 if exit_.code is None else 1)
        )
        if code and not isinstance(exit_.code, int):
            # `sys.exit("why")`: the report says why (an exit status is the status's line).
            recorder.errors.append(
                {
                    "call": recorder.current_call,
                    "error": f"the script exited with {exit_.code!r}",
                    "traceback": "",
                    **recorder.place(),
                }
            )
    except Exception as error:  # noqa: BLE001 (any error of the script is recorded: the report says where and why)
        code = recorder.raised(error)
    # The script body reached its end here (KeyboardInterrupt skips this, and the records then
    # say they are not whole; os._exit leaves no records at all).
    recorder.exit = code
    return code


def _short_temp():
    """multiprocessing binds its fork server's socket below its temp dir, and a socket's path must
    fit in 108 bytes; the scratch's temp dir may be too deep. Then multiprocessing gets a private
    folder of its own in the system's temp dir (as it would make anyway), removed at exit."""
    import atexit
    import multiprocessing.process
    import shutil
    import tempfile

    from tilefit._patches import REGISTRY

    if len(tempfile.gettempdir()) <= 60 or not os.path.isdir("/tmp"):
        return None
    short = tempfile.mkdtemp(prefix="pymp-", dir="/tmp")
    REGISTRY.set_item(
        multiprocessing.process.current_process()._config,
        "tempdir",
        short,
        "a fork server's socket path must fit in 108 bytes",
        where="multiprocessing's config",
    )
    atexit.register(shutil.rmtree, short, True)
    return short


def _read_key():
    """The key the records are signed with: tilefit writes it on stdin and closes the pipe (never
    the environment, which ``/proc/self/environ`` keeps); stdin is then ``/dev/null`` for the
    script, as it was before."""
    try:
        key = sys.stdin.readline().strip() if not sys.stdin.isatty() else ""
    except (OSError, ValueError):
        key = ""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return key


def _with_plugin(args):
    """pytest's arguments with tilefit's plugin loaded (it splits the suite's tests between the
    processes of the run): by its entry point where the package is installed, else by name."""
    from importlib import metadata

    if "tilefit.pytest_plugin" in args:
        return args
    try:
        points = metadata.entry_points(group="pytest11")
    except Exception:  # noqa: BLE001 (a broken distribution's metadata: load the plugin by name)
        points = ()
    if any(p.value == "tilefit.pytest_plugin" for p in points):
        return args
    return ["-p", "tilefit.pytest_plugin", *args]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
