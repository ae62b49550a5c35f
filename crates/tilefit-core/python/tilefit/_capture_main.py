"""The process ``tilefit capture`` starts once per target: install the emulation of the target's
device, then run the user's script as ``__main__`` with every launch recorded, and write the
records as JSON.

    python -m tilefit._capture_main DEVICE.json RECORDS.json SCRIPT.py [ARGS...]
    python -m tilefit._capture_main DEVICE.json RECORDS.json -m MODULE [ARGS...]

The emulation is in place before the script (and so anything it imports) runs. A call that needs
what emulation lacks (real data, a value the table does not have) stops there: it is recorded with
its line and reason, not raised. Any other error of the script is recorded too, with its
traceback; the records are written whatever happens.
"""

import json
import os
import runpy
import sys
import traceback


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
    from tilefit import _capture, _emulation, _inductor, _system

    emulation = _emulation.install(device)
    # The system's view too: the vendor tools first on PATH, NVML and amdsmi patched on import.
    scratch = os.path.dirname(os.path.abspath(out))
    _system.write_tools(
        device,
        os.path.join(scratch, f"bin-{os.getpid()}"),
        os.path.abspath(device_file),
    )
    _system.install_libraries(device)
    os.environ["TILEFIT_CAPTURE_EVENTS"] = os.path.abspath(out) + ".events"
    recorder = _capture.Recorder(device)
    _capture.install(recorder, emulation)
    _inductor.install(recorder, emulation)
    recorder.begin_call(module or os.path.basename(script))
    code = 0
    if module:
        sys.argv = [module, *args]
        sys.path.insert(0, os.getcwd())
        _capture.USER_ROOTS.append(os.getcwd() + os.sep)
    else:
        sys.argv = [script, *args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        _capture.USER_ROOTS.append(os.path.dirname(os.path.abspath(script)) + os.sep)
    try:
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
                    }
                )
        except Exception as error:  # noqa: BLE001 (any error of the script is recorded: the report says where and why)
            if _emulation.stop_reason(error) is not None:
                recorder.stop(error)
                # It ended the script: what the script runs after it was never run.
                entry = getattr(error, "_tilefit_stop", None)
                if entry is None and recorder.stopped:
                    entry = recorder.stopped[-1]
                if entry is not None:
                    entry["ended"] = True
            elif _capture.marked(error, "_tilefit_device_failure") is not None:
                # The device fails here too: the script ends as it would there, and says why.
                cause = _capture.marked(error, "_tilefit_device_failure")
                where = _capture._user_frame(error.__traceback__)
                recorder.errors.append(
                    {
                        "call": recorder.current_call,
                        "error": "torch.compile fails here, as on the device (the launch "
                        f"judged above): {type(cause).__name__}: {cause}",
                        "traceback": traceback.format_exc(limit=-12),
                        "file": where[0] if where else None,
                        "line": where[1] if where else None,
                    }
                )
                code = 1
            elif _capture.marked(error, "_tilefit_recorded") is not None:
                # Recorded where it was raised (a compile that failed under the emulation).
                code = 1
            else:
                where = _capture._user_frame(error.__traceback__)
                recorder.errors.append(
                    {
                        "call": recorder.current_call,
                        "error": f"{type(error).__name__}: {error}",
                        "traceback": traceback.format_exc(limit=-12),
                        "file": where[0] if where else None,
                        "line": where[1] if where else None,
                    }
                )
                code = 1
        # The run reached its end here: the records are whole (KeyboardInterrupt skips this;
        # os._exit leaves no records at all).
        recorder.exit = code
    finally:
        recorder.write(out)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
