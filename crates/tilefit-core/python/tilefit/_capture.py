"""Launch capture under device emulation: every ``kernel[grid](...)`` is recorded instead of run,
through ``@triton.jit``, ``@triton.heuristics`` and ``@triton.autotune`` (and their subclasses)
alike, and returns as if it ran.

A record holds the kernel (file, module-level name, ``@triton.jit`` line, source digest), every
argument as the JIT specializes it (pointer dtype and 16-byte alignment, int values, None,
constexprs, ``tl`` dtypes), the options (num_warps, num_stages, num_ctas, maxnreg and backend
options such as ``waves_per_eu``), the grid, and the launching line. An autotuned launch records
every config the autotuner would try after its pruning (``early_config_prune``, ``perf_model``
top-k): each one is launched through the autotuner's own benchmark step, which tilefit makes
record instead of time.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import traceback

from tilefit import _emulation, _records, _scope, _state, _values, _writes
from tilefit._patches import REGISTRY

#: Files whose frames are never "the launching line".
_OWN = (os.path.dirname(os.path.abspath(__file__)) + os.sep,)

#: Backend-independent keys a launch passes that are not compile options.
_NOT_OPTIONS = {"grid", "warmup", "debug", "instrumentation_mode"}


def thread_name():
    """The current thread's name as the report shows it: a pool's worker by its pool
    (``ThreadPoolExecutor-0_3`` is ``ThreadPoolExecutor-0``: which worker ran a task is the
    scheduler's choice, and two runs give the same report)."""
    name = threading.current_thread().name
    return re.sub(r"^(ThreadPoolExecutor-\d+)_\d+$", r"\1", name)


class Recorder:
    """The launches, stopped calls, value checks and assumptions of one process of an emulated
    run (the main process, or a child: :mod:`tilefit._processes`)."""

    def __init__(self, device):
        self.device = device
        self._next_group = 0
        self.current_call = None
        self.process_name = "main"
        self.process_kind = "main"
        self._clear()

    def _clear(self):
        """No records yet: a new run's, or a forked child's own from its fork on."""
        self.launches = []
        self.stopped = []
        self.errors = []
        self.tests = []
        self.checks = []
        self.assumptions = []
        self.scopes = {}
        self.exit = None
        #: Under pytest: the tests the suite collected (before a split run took its share).
        self.collected = None
        self.calls = 0
        self._call_patched = False
        self._local = threading.local()
        self.lock = threading.Lock()

    # The autotuned launch in progress, and how deep a benchmark call is: per thread, so two
    # threads' autotuned launches keep their own configs apart.
    @property
    def _group(self):
        if not hasattr(self._local, "group"):
            self._local.group = []
        return self._local.group

    @property
    def _benchmarking(self):
        return getattr(self._local, "benchmarking", 0)

    @_benchmarking.setter
    def _benchmarking(self, value):
        self._local.benchmarking = value

    def begin_call(self, name):
        self.calls += 1
        self.current_call = name
        # The children a call starts belong to it (under pytest, to the test).
        if self._call_patched:
            os.environ["TILEFIT_CAPTURE_CALL"] = str(name)
        else:
            # Registered once: its undo puts back what the variable held before the run.
            self._call_patched = True
            REGISTRY.set_item(
                os.environ,
                "TILEFIT_CAPTURE_CALL",
                str(name),
                "the children a call starts belong to it",
                where="os.environ",
            )

    def value_read(self, kind, what, value, frame):
        """A value host code read with no data (:mod:`tilefit._values`): a check passed over, or
        an assumption; once per line, call and kind, with a count."""
        where = _user_frame(frame)
        place = self.place()
        entries = self.checks if kind == "check" else self.assumptions
        key = (self.current_call, where, what, place["process"], place["thread"])
        with self.lock:
            for entry in entries:
                if entry["_key"] == key:
                    entry["count"] += 1
                    return
            entry = {
                "_key": key,
                "call": self.current_call,
                "file": where[0] if where else None,
                "line": where[1] if where else None,
                "what": what,
                "count": 1,
                **place,
            }
            if kind != "check":
                entry["value"] = (
                    _scope.plain(value) if not isinstance(value, str) else value
                )
            entries.append(entry)

    def assumed_before(self):
        """The first assumption of the current call in this thread's process: every launch after
        it is marked with it."""
        for entry in self.assumptions:
            if entry["call"] == self.current_call:
                return {"file": entry["file"], "line": entry["line"]}
        return None

    def place(self):
        """Where a record was made: the process and the thread."""
        return {"process": self.process_name, "thread": thread_name()}

    def become_child(self, name, kind, forked=True):
        """This process is now a child of the run, named ``name`` (``forked``: what it records
        from here is its own; what the parent recorded before the fork is the parent's)."""
        self.process_name = name
        self.process_kind = kind
        if forked:
            self._clear()

    def raised(self, error, thread=None):
        """Record an error that ended the script, a thread or a child process: a stop (it ended
        what raised it), a failure the device would have too, an error already recorded where it
        was raised, or the script's own error. Returns the exit status it means."""
        where = _user_frame(error.__traceback__)
        place = self.place()
        if thread is not None:
            place["thread"] = thread
        if _emulation.stop_reason(error) is not None:
            self.stop(error)
            entry = getattr(error, "_tilefit_stop", None)
            if entry is None and self.stopped:
                entry = self.stopped[-1]
            if entry is not None:
                entry["ended"] = True
                entry.update(place)
            return 0
        device_failure = marked(error, "_tilefit_device_failure")
        if device_failure is not None:
            text = (
                "torch.compile fails here, as on the device (the launch judged above): "
                f"{type(device_failure).__name__}: {device_failure}"
            )
        elif marked(error, "_tilefit_recorded") is not None:
            return 1
        else:
            text = f"{type(error).__name__}: {error}"
        self.errors.append(
            {
                "call": self.current_call,
                "error": text,
                "traceback": "".join(
                    traceback.format_exception(
                        type(error), error, error.__traceback__, limit=-12
                    )
                ),
                "file": where[0] if where else None,
                "line": where[1] if where else None,
                **place,
            }
        )
        return 1

    def stop(self, error, call=None, here=False):
        """Record ``error`` as a stopped call, once: where it is raised (``here``, with the
        stack's innermost user frame), or where the script let it out."""
        if getattr(error, "_tilefit_recorded", False):
            return
        frame = (
            _user_frame(sys._getframe(2)) if here else _user_frame(error.__traceback__)
        )
        entry = {
            "call": call or self.current_call,
            "file": frame[0] if frame else None,
            "line": frame[1] if frame else None,
            "reason": _emulation.stop_reason(error)
            or f"{type(error).__name__}: {error}",
            **self.place(),
        }
        self.stopped.append(entry)
        try:
            error._tilefit_recorded = True
            error._tilefit_stop = entry
        except AttributeError:
            pass

    def as_json(self):
        import torch
        import triton

        return {
            "device": self.device,
            "versions": {
                "python": sys.version.split()[0],
                "torch": torch.__version__,
                "triton": triton.__version__,
            },
            "launches": self.launches,
            "scopes": self.scopes,
            "stopped": self.stopped,
            "errors": self.errors,
            "checks": [_public(e) for e in self.checks],
            "assumptions": [_public(e) for e in self.assumptions],
            "process": {"name": self.process_name, "kind": self.process_kind},
            "calls": self.calls,
            "collected": self.collected,
            "tests": self.tests,
            # The last key: the reader checks that the run reached its end.
            "exit": self.exit,
            "complete": self.exit is not None,
        }

    def _tool_gaps(self):
        """Values the stand-in tools (``nvidia-smi``...) were asked for and the table lacks:
        they ran in subprocesses, which append them to the events file."""
        events = os.environ.get("TILEFIT_CAPTURE_EVENTS")
        if not events or not os.path.exists(events):
            return
        with open(events, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                self.stopped.append(
                    {
                        "call": self.current_call,
                        "file": None,
                        "line": None,
                        "reason": f"`{event.get('tool')}` was asked for the {event.get('gap')}, "
                        "which tilefit's device table does not have",
                    }
                )
        os.remove(events)

    def write(self, path):
        self._tool_gaps()
        text = _scope.dumps(self.as_json(), indent=1, default=repr)
        with open(path, "w", encoding="utf-8") as out:
            out.write(text + "\n")


def _public(entry):
    return {k: v for k, v in entry.items() if not k.startswith("_")}


def installed():
    """The recorder of this process's emulated run, or None."""
    return _state.RUN.recorder


def add_user_root(folder):
    """Count ``folder`` (ending with the separator) as the user's own code: a launch's place is
    the innermost frame there, not an engine's helper."""
    _state.RUN.user_roots.append(folder)


_LIBRARIES = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def _frames(tb_or_frame):
    """(frame, line) pairs, innermost first, of a traceback or a stack."""
    frames = []
    if tb_or_frame is not None and hasattr(tb_or_frame, "tb_frame"):
        tb = tb_or_frame
        while tb is not None:
            frames.append((tb.tb_frame, tb.tb_lineno))
            tb = tb.tb_next
        frames.reverse()
    else:
        frame = tb_or_frame
        while frame is not None:
            frames.append((frame, frame.f_lineno))
            frame = frame.f_back
    return frames


def _is_user(frame):
    name = frame.f_globals.get("__name__", "") or ""
    top = name.split(".")[0]
    if top in ("torch", "triton", "runpy", "importlib", "_pytest", "pytest", "pluggy"):
        return False
    filename = os.path.abspath(frame.f_code.co_filename)
    return not (filename.startswith(_OWN) or filename.startswith("<"))


def _in_user_roots(frame):
    filename = os.path.abspath(frame.f_code.co_filename)
    if any(part in filename for part in _LIBRARIES):
        return False
    return any(filename.startswith(root) for root in _state.RUN.user_roots)


def _user_frame(tb_or_frame):
    """(file, line) of the innermost frame of the user's own code (under the run's user roots),
    else of the innermost frame that is not torch, Triton or tilefit."""
    frames = [(f, line) for f, line in _frames(tb_or_frame) if _is_user(f)]
    for frame, line in frames:
        if _in_user_roots(frame):
            return (os.path.abspath(frame.f_code.co_filename), line)
    if frames:
        frame, line = frames[0]
        return (os.path.abspath(frame.f_code.co_filename), line)
    return None


def _chain(frame):
    """The frames from the user's call down to the launch (outermost first), torch's, Triton's
    and tilefit's left out: where an engine's helpers passed the call on."""
    frames = [(f, line) for f, line in _frames(frame) if _is_user(f)]
    user = next(
        (i for i, (f, _) in enumerate(frames) if _in_user_roots(f)), len(frames) - 1
    )
    return [
        {
            "file": os.path.abspath(f.f_code.co_filename),
            "line": line,
            "function": f.f_code.co_name,
        }
        for f, line in reversed(frames[: user + 1])
    ]


def marked(error, *marks):
    """The error in ``error``'s chain (what it was raised from, and during) that carries one of
    ``marks`` (``_tilefit_recorded``, ``_tilefit_device_failure``), or None."""
    seen = set()
    while error is not None and id(error) not in seen:
        if any(getattr(error, mark, False) for mark in marks):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def capture_run(recorder, emulation, jit, args, kwargs, grid, warmup):
    """Record one launch of ``jit`` (a JITFunction) with the launch's own values into
    ``recorder`` (``emulation`` says whether a benchmark call made it)."""
    _writes.forget_written(jit, args, kwargs, _values.written)
    # Inside an autotuned launch, the launching line is where the autotuner was called.
    outer = recorder._group[0] if recorder and recorder._group else None
    caller = (
        outer["caller"]
        if outer and outer.get("caller")
        else _user_frame(sys._getframe(1))
    )
    record = {
        "kernel": _records.kernel_info(jit),
        "caller": {"file": caller[0], "line": caller[1]} if caller else None,
        "chain": outer["chain"]
        if outer and outer.get("chain")
        else _chain(sys._getframe(1)),
        "warmup": bool(warmup),
        "call": recorder.current_call if recorder else None,
    }
    if recorder is not None:
        record.update(recorder.place())
        assumed = recorder.assumed_before()
        if assumed is not None:
            record["assumed"] = assumed
    group = recorder._group[-1] if recorder and recorder._group else None
    if group is not None:
        benchmarking = recorder._benchmarking or emulation.benchmarking
        record["autotune"] = {
            "group": group["id"],
            "role": "candidate" if benchmarking else "chosen",
        }
    try:
        params = {p.name: p for p in jit.params}
        options = {
            k: v for k, v in kwargs.items() if k not in params and k not in _NOT_OPTIONS
        }
        passed = {k: v for k, v in kwargs.items() if k in params}
        bound = jit.signature.bind_partial(*args, **passed)
        values = dict(bound.arguments)
        for param in jit.params:
            if param.name not in values and param.has_default:
                values[param.name] = param.default
        missing = [p.name for p in jit.params if p.name not in values]
        if missing:
            raise _records.Unsupported(
                f"the launch passes no value for {', '.join(missing)}"
            )
        arguments, constexprs = {}, {}
        for param in jit.params:
            value = values[param.name]
            if param.is_constexpr:
                try:
                    constexprs[param.name] = _records.constexpr(value)
                except _records.Unsupported as why:
                    raise _records.Unsupported(f"`{param.name}`: {why}") from None
            else:
                arguments[param.name] = _records.argument(param.name, value)
        record["args"] = arguments
        record["constexprs"] = constexprs
        record["options"] = {
            k: _records.constexpr(v) for k, v in options.items() if v is not None
        }
        record["globals"] = _records.globals_of(jit)
        record["grid"] = None if warmup else _records.grid_of(grid, values)
        text, digest = _scope.scope_file(jit)
        record["kernel"]["scope"] = digest
        if recorder is not None:
            recorder.scopes.setdefault(digest, text)
    except _records.Unsupported as why:
        record["unsupported"] = str(why)
    except _scope.NotCarried as why:
        record["unsupported"] = f"its scope cannot be carried to a compile: {why}"
    if recorder is not None:
        recorder.launches.append(record)


def _autotuned_run(original, recorder):
    def run(self, *args, **kwargs):
        recorder._next_group += 1
        group = {
            "id": recorder._next_group,
            "caller": _user_frame(sys._getframe(1)),
            "chain": _chain(sys._getframe(1)),
        }
        recorder._group.append(group)
        start = len(recorder.launches)
        # Every call tries its pruned configs afresh: a cached choice would hide them.
        if isinstance(getattr(self, "cache", None), dict):
            self.cache = {}
        if hasattr(self, "cache_results"):
            self.cache_results = False
        try:
            return original(self, *args, **kwargs)
        finally:
            recorder._group.pop()
            mine = recorder.launches[start:]
            candidates = [
                r
                for r in mine
                if r.get("autotune", {}).get("group") == group["id"]
                and r["autotune"]["role"] == "candidate"
            ]
            if candidates:
                recorder.launches[start:] = [
                    r
                    for r in mine
                    if not (
                        r.get("autotune", {}).get("group") == group["id"]
                        and r["autotune"]["role"] == "chosen"
                    )
                ]
            # The names an entry of the list sets (what a fix may add): not a heuristic's.
            keys = sorted(
                {
                    str(k)
                    for c in getattr(self, "configs", []) or []
                    for k in (getattr(c, "kwargs", None) or {})
                }
            )
            for r in mine:
                if r.get("autotune", {}).get("group") == group["id"]:
                    r["autotune"]["configs"] = len(getattr(self, "configs", []) or [])
                    r["autotune"]["tried"] = max(len(candidates), 1)
                    r["autotune"]["keys"] = keys

    return run


def _autotuned_bench(original, recorder, emulation):
    def bench(self, *args, config, **meta):
        self.__dict__["do_bench"] = emulation.fake_benchmark
        recorder._benchmarking += 1
        try:
            return original(self, *args, config=config, **meta)
        finally:
            recorder._benchmarking -= 1

    return bench


def install(recorder, emulation):
    """Record every launch into ``recorder`` instead of running it, under ``emulation`` (what
    :func:`tilefit._emulation.install` returned)."""
    run = _state.RUN
    run.recorder = recorder
    run.on_stop.append(lambda error: recorder.stop(error, here=True))
    run.on_value.append(recorder.value_read)
    from triton.runtime import autotuner
    from triton.runtime.jit import JITFunction

    def run(self, *args, grid=None, warmup=False, **kwargs):
        return capture_run(recorder, emulation, self, args, kwargs, grid, warmup)

    REGISTRY.replace(
        JITFunction, "run", run, "each launch is recorded and judged, not run"
    )
    REGISTRY.replace(
        autotuner.Autotuner,
        "run",
        _autotuned_run(autotuner.Autotuner.run, recorder),
        "an autotuned launch records the configs it tries as one launch",
    )
    REGISTRY.replace(
        autotuner.Autotuner,
        "_bench",
        _autotuned_bench(autotuner.Autotuner._bench, recorder, emulation),
        "benchmarking a config times nothing under emulation",
    )

    # An engine's own Autotuner subclass (FlagGems' LibTuner) that overrides `run` is wrapped the
    # same way when it is defined, so the configs it tries are one launch's, not launches.
    def wrap_subclass(cls, **kwargs):
        if "run" in cls.__dict__:
            REGISTRY.replace(
                cls,
                "run",
                _autotuned_run(cls.__dict__["run"], recorder),
                "an engine's Autotuner subclass records its configs as one launch",
            )

    REGISTRY.replace(
        autotuner.Autotuner,
        "__init_subclass__",
        classmethod(wrap_subclass),
        "an engine's Autotuner subclass that overrides run is wrapped when defined",
    )
