"""The pytest plugin (entry point ``pytest11``): a kernel library's own test suite covers devices
its CI does not have.

``pytest --tilefit-fleet=h100,rtx-pro-6000`` points ``TRITON_CACHE_DIR`` at a folder of the
session, runs the suite as usual, then replays every kernel the suite compiled for the fleet with
``tilefit replay`` and prints, per kernel, the devices it would miss and by how many bytes. The
session fails, with one line saying why, if any kernel would miss a device, if any replay did not
compile or failed, or if ``tilefit replay`` itself failed, unless ``--tilefit-report-only``. The
session's Triton cache and the replay's report are removed when it ends. A test that fails with
Triton's ``OutOfResources`` gets ``tilefit explain``'s reading of the message in its report.

``pytest --tilefit-emulate=rtx-pro-6000,gb10,h100,mi300x`` needs no GPU: the session runs the
suite once per device under tilefit's device emulation (``tilefit capture --module pytest``, one
process per device, the emulation in place before any test module is imported), captures every
launch and compiles it for the device's arch, and prints, per kernel, the devices it would miss.
A test runs past its value checks (kernel outputs have no data under emulation: each check is
passed over and listed as "not checked" at its line), so its backward is reached; a value it
reads for a launch is computed where the data is known and assumed (declared) elsewhere. A test
that still ends early (a stop) fails the session as a script's stop does (``stopped-early``).
The session's result is the capture's gate: it fails where a launch would crash the engine on a
device (a fixed config over the budget, an autotuned launch none of whose configs fits), where a
test ended early, or where the run fails closed, unless ``--tilefit-report-only``.
"""

import json
import os
import shutil
import subprocess
import tempfile

import pytest

_STATE = "_tilefit_state"


def pytest_addoption(parser):
    group = parser.getgroup(
        "tilefit", "tilefit: the shared-memory cliff on devices you lack"
    )
    group.addoption(
        "--tilefit-fleet",
        default=None,
        help="devices or archs to replay every compiled kernel for, comma-separated "
        "(tilefit's names: h100, rtx-pro-6000, gb10, sm_120, gfx942)",
    )
    group.addoption(
        "--tilefit-emulate",
        default=None,
        help="devices to run the suite as if on, comma-separated, on a machine with no GPU "
        "(tilefit's names: rtx-pro-6000, gb10, h100, mi300x, sm_120)",
    )
    group.addoption(
        "--tilefit-shard",
        default=None,
        help="with --tilefit-emulate: run only shard K of N of every device's tests (`2/3`, or "
        "`auto` from a Kubernetes Indexed Job or a Slurm array); needs --tilefit-json, and "
        "`tilefit merge` puts the shards together",
    )
    group.addoption(
        "--tilefit-json",
        default=None,
        help="with --tilefit-emulate: write the capture's report (a shard's, with --tilefit-shard) "
        "as JSON to this file",
    )
    group.addoption(
        "--tilefit-report-only",
        action="store_true",
        default=False,
        help="print the table but do not fail the session when a kernel would miss a device",
    )
    group.addoption(
        "--tilefit-bin",
        default=None,
        help="the tilefit binary (default: TILEFIT_BIN, then `tilefit` on PATH)",
    )


def _find_binary(config):
    """--tilefit-bin, then TILEFIT_BIN, then `tilefit` on PATH; None when there is none."""
    return (
        config.getoption("--tilefit-bin")
        or os.environ.get("TILEFIT_BIN")
        or shutil.which("tilefit")
    )


def _binary(config):
    found = _find_binary(config)
    if not found:
        raise RuntimeError(
            "tilefit's pytest plugin needs the tilefit binary: `pip install tilefit`, or pass "
            "--tilefit-bin PATH"
        )
    return found


class _State:
    def __init__(self, fleet, report_only, binary):
        self.fleet = fleet
        self.report_only = report_only
        self.binary = binary
        self.folder = tempfile.mkdtemp(prefix="tilefit-pytest-")
        self.cache = os.path.join(self.folder, "triton-cache")
        os.makedirs(self.cache)
        self.report = None
        self.error = None
        self.misses = []
        self.broken = []
        #: Why the plugin fails the session, in one line (None: it does not).
        self.verdict = None

    def remove(self):
        shutil.rmtree(self.folder, ignore_errors=True)


def _emulated():
    """The recorder of this process's emulated run, when pytest runs under ``tilefit capture``."""
    from tilefit import _capture

    return _capture.installed()


#: Options of this session that are not the children's: tilefit's own, and those it takes over
#: (pytest-xdist's workers: tilefit spreads the tests itself; JUnit: tilefit writes one for every
#: device), each with whether it takes a value.
_NOT_THE_CHILDRENS = {
    "--tilefit-emulate": True,
    "--tilefit-shard": True,
    "--tilefit-json": True,
    "-n": True,
    "--numprocesses": True,
    "--dist": True,
    "--junitxml": True,
    "--junit-xml": True,
}


def _split_args(args):
    """The session's arguments for the children (without the options above), and the values of
    those options (the last given of each)."""
    out, taken, pending = [], {}, None
    for arg in args:
        if pending is not None:
            taken[pending] = arg
            pending = None
            continue
        name, eq, value = arg.partition("=")
        if name in _NOT_THE_CHILDRENS:
            if eq:
                taken[name] = value
            else:
                pending = name
            continue
        if arg.startswith("-n") and arg[2:].isdigit():
            taken["-n"] = arg[2:]
            continue
        out.append(arg)
    return out, taken


def _tilefit_options(taken, invocation_dir):
    """tilefit capture's options from the session's: workers (``-n``), the shard, the JSON and
    JUnit files (their paths from where pytest was run)."""
    options = []
    workers = taken.get("-n") or taken.get("--numprocesses")
    if workers and workers.isdigit():
        options += ["--jobs", workers]
    if taken.get("--tilefit-shard"):
        options += ["--shard", taken["--tilefit-shard"]]
    for flag, ours in (
        ("--tilefit-json", "--json"),
        ("--junitxml", "--junit"),
        ("--junit-xml", "--junit"),
    ):
        if taken.get(flag):
            options += [ours, os.path.join(str(invocation_dir), taken[flag])]
    return options


def pytest_cmdline_main(config):
    """``--tilefit-emulate``: this process runs no test itself; ``tilefit capture`` runs the suite
    once per device, and its report and gate are the session's."""
    devices = config.getoption("--tilefit-emulate")
    if not devices and (
        config.getoption("--tilefit-shard") or config.getoption("--tilefit-json")
    ):
        raise pytest.UsageError(
            "--tilefit-shard and --tilefit-json are options of an emulated run: add "
            "--tilefit-emulate=DEVICES"
        )
    if not devices or _emulated() is not None:
        return None
    import sys

    binary = _binary(config)
    args, taken = _split_args(list(config.invocation_params.args))
    options = _tilefit_options(taken, config.invocation_params.dir)
    command = [
        binary,
        "capture",
        "--module",
        "pytest",
        "--targets",
        devices,
        "--python",
        sys.executable,
        *options,
    ]
    if config.getoption("--tilefit-report-only"):
        # Report the devices' misses and the tests that ended early without failing on
        # them (the capture still fails closed: a suite that did not run is never a pass).
        command += ["--fail-on", "none", "--allow-stopped"]
    else:
        command += ["--fail-on", "baseline,none-fits"]
    # The children load this plugin too: by its entry point when it is installed, else by name.
    loaded_by_entry_point = config.pluginmanager.get_plugin("tilefit") is not None
    plugin = [] if loaded_by_entry_point else ["-p", "tilefit.pytest_plugin"]
    print(f"tilefit: the suite run as if on {devices}", flush=True)
    returncode, stdout, stderr = _run_streaming(
        command + ["--", *plugin, "-p", "no:cacheprovider", *args],
        str(config.invocation_params.dir),
    )
    print(stdout, end="")
    if returncode not in (0, 1):
        print("\n".join(line for line in stderr if not line.startswith("tilefit:")))
    elif returncode == 1 and stderr and not stderr[-1].startswith("tilefit:"):
        # The gate's line: why the session fails (tilefit's own lines were shown already).
        print(stderr[-1])
    return returncode


def _run_streaming(command, cwd):
    """Run ``tilefit capture``: its own lines (each device's start, its tests done and left,
    its launches judged) shown as they come; the children's output kept, not shown (the report
    keeps each device's tail). Returns the status, stdout and stderr's lines."""
    import sys
    import threading

    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    lines = []

    def follow():
        for line in process.stderr:
            line = line.rstrip("\n")
            lines.append(line)
            if line.startswith("tilefit:"):
                print(line, file=sys.stdout, flush=True)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    stdout = process.stdout.read()
    process.wait()
    reader.join()
    return process.returncode, stdout, lines


class _Selection:
    """Which of the suite's tests this process runs (``TILEFIT_CAPTURE_TESTS``: tilefit's
    ``parts::Selection``): test ``i`` of the suite as collected belongs to shard
    ``(i + offset) % shards`` and, within it, to part ``((i + offset) // shards) % parts``."""

    def __init__(self, text):
        self.offset, self.shards, self.shard, self.parts, self.part = (
            int(n) for n in text.split(",")
        )

    def keeps(self, index):
        at = index + self.offset
        return (
            at % self.shards == self.shard
            and (at // self.shards) % self.parts == self.part
        )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """Under emulation: every test gets its index in the suite (the same in every process of a
    split run), and a split run keeps only its share (the rest deselected, as ``-k`` does)."""
    if _emulated() is None:
        return
    from tilefit import _state

    for index, item in enumerate(items):
        item._tilefit_index = index
    config._tilefit_collected = len(items)
    _emulated().collected = len(items)
    if _state.RUN.tests is None:
        _progress(0, len(items))
        return
    selection = _Selection(_state.RUN.tests)
    keep = [item for i, item in enumerate(items) if selection.keeps(i)]
    dropped = [item for i, item in enumerate(items) if not selection.keeps(i)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    config._tilefit_selected = len(keep)
    _progress(0, len(keep))


def _progress(done, total):
    """Tests done and selected, for tilefit's progress line (replaced whole: never read half)."""
    from tilefit import _state

    if not _state.RUN.progress:
        return
    partial = f"{_state.RUN.progress}.{os.getpid()}"
    try:
        with open(partial, "w", encoding="utf-8") as f:
            f.write(f"{done} {total}\n")
        os.replace(partial, _state.RUN.progress)
    except OSError:
        pass


def pytest_runtest_logfinish(nodeid, location):
    if _emulated() is None:
        return
    from tilefit import _state

    run = _state.RUN
    run.done += 1
    _progress(run.done, run.selected or 0)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    if _emulated() is None:
        return
    from tilefit import _state

    _state.RUN.selected = len(session.items)


def _emulated_sessionfinish(session):
    """A process of a split run whose share of a suite is empty ran nothing, as it should:
    pytest's status 5 (no tests) is then 0. A suite with no tests at all keeps its 5."""
    if _emulated() is None:
        return
    collected = getattr(session.config, "_tilefit_collected", 0)
    if session.exitstatus == 5 and collected > 0:
        session.exitstatus = 0


def pytest_runtest_protocol(item, nextitem):
    recorder = _emulated()
    if recorder is not None:
        recorder.begin_call(item.nodeid)
        item._tilefit_first_launch = len(recorder.launches)


def _counts(recorder, nodeid):
    """A test's checks passed over (lines), assumptions (lines) and stops."""
    return (
        sum(1 for c in recorder.checks if c["call"] == nodeid),
        sum(1 for a in recorder.assumptions if a["call"] == nodeid),
        sum(1 for s in recorder.stopped if s["call"] == nodeid),
    )


def _checked_here(recorder, nodeid, error):
    """Whether ``error`` (an AssertionError) was raised by a value check the test made on data
    emulation passed over: the check's line read a value that emulation does not have."""
    from tilefit import _capture

    where = _capture._user_frame(error.__traceback__)
    if where is None:
        return False
    return any(
        c["call"] == nodeid and (c["file"], c["line"]) == where
        for c in recorder.checks + recorder.assumptions
    )


def _emulated_report(item, call, report):
    """Under emulation, a test runs past its value checks (passed over, counted); a test that
    still ends early (a stop: real data it needs; a check whose values emulation cannot pass
    over) is a stop that ended it, which fails the session as it fails a script
    (``stopped-early``) unless ``--tilefit-report-only``. Either way pytest reports it as skipped
    with why: the gate is tilefit's."""
    recorder = _emulated()
    launches = len(recorder.launches) - getattr(
        item, "_tilefit_first_launch", len(recorder.launches)
    )
    from tilefit import _emulation

    item._tilefit_seconds = getattr(item, "_tilefit_seconds", 0.0) + (
        report.duration or 0.0
    )
    skipped = report.skipped and not hasattr(report, "wasxfail")
    if not (report.when == "call" or report.failed or skipped):
        return
    nodeid = item.nodeid
    if skipped:
        # Skipped (a marker, `pytest.skip`): a test of the suite all the same, listed as such.
        outcome = "skipped"
    elif report.failed and call.excinfo is not None:
        error = call.excinfo.value
        if _emulation.stop_reason(error) is not None:
            outcome = "stopped"
            # The test's call is the recorder's current one: the stop is recorded as ending it.
            recorder.raised(error)
        elif isinstance(error, AssertionError) and _checked_here(
            recorder, nodeid, error
        ):
            outcome = "stopped"
            where = _capture_site(error)
            recorder.stopped.append(
                {
                    "call": nodeid,
                    "file": where[0] if where else None,
                    "line": where[1] if where else None,
                    "reason": "a value check failed on values emulation does not have "
                    f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})",
                    "ended": True,
                    **recorder.place(),
                }
            )
        else:
            outcome = "failed"
        if outcome != "failed":
            report.outcome = "skipped"
            path, line = item.location[0], (item.location[1] or 0) + 1
            report.longrepr = (path, line, f"tilefit: {outcome} under emulation")
    elif hasattr(report, "wasxfail") and report.skipped:
        # Marked to fail, and it failed: what it (and the children it started) raised is what
        # the test expects.
        outcome = "xfailed"
    else:
        checks = _counts(recorder, nodeid)[0]
        if launches > 0:
            outcome = "captured, checks not checked" if checks else "captured, passed"
        else:
            outcome = "passed" if report.passed else report.outcome
    checks, assumptions, stops = _counts(recorder, nodeid)
    path, line = item.location[0], item.location[1]
    recorder.tests.append(
        {
            "nodeid": nodeid,
            "outcome": outcome,
            "launches": launches,
            "checks": checks,
            "assumptions": assumptions,
            "stops": stops,
            "index": getattr(item, "_tilefit_index", None),
            "file": path,
            "line": None if line is None else line + 1,
            "seconds": round(getattr(item, "_tilefit_seconds", 0.0), 3),
        }
    )


def _capture_site(error):
    from tilefit import _capture

    return _capture._user_frame(error.__traceback__)


def pytest_configure(config):
    fleet = config.getoption("--tilefit-fleet")
    if not fleet:
        return
    if hasattr(config, "workerinput"):
        # A pytest-xdist worker: it inherited the controller's TRITON_CACHE_DIR, and the
        # controller replays the whole session's cache once.
        return
    state = _State(fleet, config.getoption("--tilefit-report-only"), _binary(config))
    # Triton reads the variable at each compile, so kernels compiled from here on land in it.
    os.environ["TRITON_CACHE_DIR"] = state.cache
    setattr(config, _STATE, state)


def _misses(report):
    """(kernel name, source, device, shared bytes, budget, over by) for every verdict over."""
    rows = []
    for result in report.get("results", []):
        kernel = result.get("kernel", {})
        for verdict in result.get("verdicts", []):
            if verdict.get("verdict") == "over-budget":
                rows.append(
                    (
                        kernel.get("name", "?"),
                        kernel.get("source", ""),
                        verdict["device"],
                        result.get("shared_bytes"),
                        verdict.get("budget"),
                        verdict.get("over_by"),
                    )
                )
    return rows


def _broken(report):
    """(kernel name, source, arch, status, reason) for every replay that gave no size: it did not
    compile, or its worker failed."""
    rows = []
    for result in report.get("results", []):
        status = result.get("status")
        if status in ("compile-error", "failed"):
            kernel = result.get("kernel", {})
            error = result.get("error") or {}
            rows.append(
                (
                    kernel.get("name", "?"),
                    kernel.get("source", ""),
                    result.get("arch", "?"),
                    status,
                    next(iter(str(error.get("message", "")).splitlines()), ""),
                )
            )
    return rows


def _fail(session, state, why):
    state.verdict = why
    if not state.report_only and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_sessionfinish(session, exitstatus):
    _emulated_sessionfinish(session)
    state = getattr(session.config, _STATE, None)
    if state is None:
        return
    compiled = any(
        name.endswith(".json") for _, _, names in os.walk(state.cache) for name in names
    )
    if not compiled:
        state.report = {"kernels": []}
        return
    out = os.path.join(state.folder, "replay.json")
    run = subprocess.run(
        [state.binary, "replay", state.cache, "--targets", state.fleet, "--json", out],
        capture_output=True,
        text=True,
        check=False,
    )
    if os.path.exists(out):
        try:
            with open(out, encoding="utf-8") as f:
                state.report = json.load(f)
        except (OSError, ValueError) as e:
            state.error = f"`tilefit replay` wrote an unreadable report: {e}"
    if state.report is None and state.error is None:
        state.error = (
            f"`tilefit replay` failed (exit {run.returncode}): {run.stderr.strip()}"
        )
    if state.report is not None:
        state.misses = _misses(state.report)
        state.broken = _broken(state.report)
    reasons = []
    if state.misses:
        reasons.append(f"{len(state.misses)} kernel verdicts over a device's budget")
    if state.broken:
        reasons.append(f"{len(state.broken)} replays that did not compile or failed")
    if state.error:
        reasons.append(state.error.splitlines()[0])
    elif run.returncode != 0:
        reasons.append(f"`tilefit replay` exited {run.returncode}")
    if reasons:
        _fail(session, state, "; ".join(reasons))


def pytest_unconfigure(config):
    state = getattr(config, _STATE, None)
    if state is not None:
        state.remove()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = getattr(config, _STATE, None)
    if state is None:
        return
    tr = terminalreporter
    tr.section(f"tilefit: kernels this session compiled, on {state.fleet}")
    failing = not state.report_only
    if state.error:
        tr.write_line(state.error, red=True)
    kernels = state.report.get("kernels", []) if state.report else []
    if state.report is not None and not kernels and not state.error:
        tr.write_line("the session compiled no Triton kernels: nothing to replay")
        return
    if state.report is not None:
        triton = (state.report.get("versions") or [{}])[0].get("replayed_with", "?")
        tr.write_line(f"{len(kernels)} kernel variant(s) replayed with Triton {triton}")
        if not state.misses and not state.broken:
            tr.write_line("every kernel fits every device of the fleet", green=True)
        if state.misses:
            width = max(len(m[0]) for m in state.misses)
            for name, source, device, shared, budget, over in state.misses:
                tr.write_line(
                    f"{name:<{width}}  OVER on {device}: {shared} bytes > {budget} (by {over})  {source}",
                    red=failing,
                )
        for name, source, arch, status, reason in state.broken:
            tr.write_line(
                f"{name}  {status.upper()} on {arch}: {reason}  {source}",
                red=failing,
            )
    if state.verdict:
        if state.report_only:
            tr.write_line(
                f"tilefit: --tilefit-report-only: not failing the session ({state.verdict})"
            )
        else:
            tr.write_line(f"tilefit: failing the session: {state.verdict}", red=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    if _emulated() is None:
        # Before the report is made, so the section is part of it.
        _explain(item, call)
    outcome = yield
    if _emulated() is not None:
        _emulated_report(item, call, outcome.get_result())


def _explain(item, call):
    """A test failing with Triton's OutOfResources gets `tilefit explain`'s reading."""
    if call.excinfo is None or call.excinfo.typename != "OutOfResources":
        return
    binary = _find_binary(item.config)
    if not binary:
        return
    explained = subprocess.run(
        [binary, "explain", str(call.excinfo.value)],
        capture_output=True,
        text=True,
        check=False,
    )
    text = explained.stdout.strip() or explained.stderr.strip()
    if text:
        item.add_report_section(call.when, "tilefit explain", text)
