"""The pytest plugin (entry point ``pytest11``): a kernel library's own test suite covers devices
its CI does not have.

``pytest --tilefit-fleet=h100,rtx-pro-6000`` points ``TRITON_CACHE_DIR`` at a folder of the
session, runs the suite as usual, then replays every kernel the suite compiled for the fleet with
``tilefit replay`` and prints, per kernel, the devices it would miss and by how many bytes. The
session fails if any would miss, unless ``--tilefit-report-only``. A test that fails with Triton's
``OutOfResources`` gets ``tilefit explain``'s reading of the message in its report.
"""

import json
import os
import shutil
import subprocess
import tempfile

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
        self.cache = tempfile.mkdtemp(prefix="tilefit-pytest-triton-cache-")
        self.report = None
        self.error = None
        self.misses = []


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


def pytest_sessionfinish(session, exitstatus):
    state = getattr(session.config, _STATE, None)
    if state is None:
        return
    compiled = any(
        name.endswith(".json") for _, _, names in os.walk(state.cache) for name in names
    )
    if not compiled:
        state.report = {"kernels": []}
        return
    out = os.path.join(
        state.cache, "..", os.path.basename(state.cache) + "-replay.json"
    )
    run = subprocess.run(
        [state.binary, "replay", state.cache, "--targets", state.fleet, "--json", out],
        capture_output=True,
        text=True,
        check=False,
    )
    if not os.path.exists(out):
        state.error = (
            f"`tilefit replay` failed (exit {run.returncode}): {run.stderr.strip()}"
        )
        if not state.report_only:
            session.exitstatus = 1
        return
    with open(out, encoding="utf-8") as f:
        state.report = json.load(f)
    state.misses = _misses(state.report)
    if state.misses and not state.report_only and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = getattr(config, _STATE, None)
    if state is None:
        return
    tr = terminalreporter
    tr.section(f"tilefit: kernels this session compiled, on {state.fleet}")
    if state.error:
        tr.write_line(state.error, red=True)
        return
    kernels = state.report.get("kernels", []) if state.report else []
    if not kernels:
        tr.write_line("the session compiled no Triton kernels: nothing to replay")
        return
    triton = state.report.get("versions", [{}])[0].get("replayed_with", "?")
    tr.write_line(
        f"{len(kernels)} kernel variant(s) replayed with Triton {triton} "
        f"(Triton cache {state.cache})"
    )
    if not state.misses:
        tr.write_line("every kernel fits every device of the fleet", green=True)
        return
    width = max(len(m[0]) for m in state.misses)
    for name, source, device, shared, budget, over in state.misses:
        tr.write_line(
            f"{name:<{width}}  OVER on {device}: {shared} bytes > {budget} (by {over})  {source}",
            red=not state.report_only,
        )
    if state.report_only:
        tr.write_line("--tilefit-report-only: not failing the session")


def pytest_runtest_makereport(item, call):
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
