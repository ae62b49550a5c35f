# --- The zygote ---------------------------------------------------------------------------------
# With TILEFIT_ZYGOTE=1 the process never compiles a user's kernel. tilefit gives it a Unix socket
# as stdin; each `fork` request arrives with three file descriptors (SCM_RIGHTS): the new worker's
# stdin, stdout and stderr (for a `zygote` fork: a control socket, stdout and stderr). The fork
# shares Triton's import and, after a `warm` request, the compiler's first-compile initialisation
# for one arch, copy-on-write. A fork is refused while the process runs more than one thread (an
# MLIR or LLVM thread pool would be copied half-held): tilefit then starts workers the plain way.

import os
import sys
import time

from . import protocol
from .compiling import compile_job
from .errors import error_reply
from .protocol import read_request, send
from .stand_ins import IMPORT_ERROR, JobError, hello

WARM_SOURCE = """import triton
import triton.language as tl


@triton.jit
def tilefit_warm(a_ptr, c_ptr, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + rows[:, None] * BLOCK + rows[None, :])
    tl.store(c_ptr + rows[:, None] * BLOCK + rows[None, :], tl.dot(a, a))
"""


def warm(request):
    """Compile a small dot kernel for the target, stopped early like a job: the compiler's one-time
    initialisation for the arch (contexts, dialects, the backend's tool lookups) then lives in this
    process, for every fork to inherit."""
    import tempfile

    # In the run's own Triton cache folder (its scratch), which tilefit removes however the run
    # ends: a zygote killed mid-warm-up leaves nothing in the temp folder.
    folder = tempfile.mkdtemp(
        prefix="tilefit-warm-", dir=os.environ.get("TRITON_CACHE_DIR")
    )
    path = os.path.join(folder, "tilefit_warm.py")
    with open(path, "w", encoding="utf-8") as file:
        file.write(WARM_SOURCE)
    pointer = {"type": "*fp16", "aligned": True}
    started = time.perf_counter()
    try:
        compile_job(
            {
                "kernel_file": path,
                "function": "tilefit_warm",
                "args": {"a_ptr": pointer, "c_ptr": pointer},
                "constexprs": {"BLOCK": 32},
                "options": {"num_warps": 4, "num_stages": 2},
                "target": request["target"],
                "full": False,
            }
        )
    finally:
        # The compile is done and nothing reads the source again: leave nothing in the temp folder.
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return {
        "timings": {"specialize_s": 0.0, "compile_s": time.perf_counter() - started}
    }


def thread_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def _exit_report(status):
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1}


def _sweep(exits):
    """Reap every child that has ended, keeping its status for a later `reap`."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        exits[pid] = _exit_report(status)
        if len(exits) > 4096:
            exits.pop(next(iter(exits)))


def reap(request, exits):
    pid = int(request["pid"])
    deadline = time.monotonic() + request.get("wait_ms", 0) / 1000
    while True:
        _sweep(exits)
        if pid in exits:
            return {"exit": exits.pop(pid)}
        if time.monotonic() >= deadline:
            return {"exit": {"running": True}}
        time.sleep(0.01)


def _received_fds(ancillary):
    import array
    import socket

    fds = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            numbers = array.array("i")
            numbers.frombytes(payload[: len(payload) - len(payload) % numbers.itemsize])
            fds.extend(numbers)
    return fds


def zygote_loop():
    """Serve `warm`, `fork` and `reap`. Returns in a forked worker (which then serves jobs) and
    `None`'s when tilefit closes the socket."""
    import socket

    control = socket.socket(fileno=0)
    pending, fds, exits = b"", [], {}
    while True:
        while b"\n" not in pending:
            data, ancillary, _flags, _address = control.recvmsg(
                1 << 20, socket.CMSG_SPACE(8 * 4)
            )
            fds.extend(_received_fds(ancillary))
            if not data:
                _sweep(exits)
                return None
            pending += data
        line, pending = pending.split(b"\n", 1)
        if not line.strip():
            continue
        request = read_request(line)
        _sweep(exits)
        reply = {"type": "reply", "id": request.get("id"), "pid": os.getpid()}
        kind = request.get("type")
        try:
            if IMPORT_ERROR is not None:
                raise JobError("toolchain", f"triton does not import: {IMPORT_ERROR}")
            if kind == "warm":
                reply.update({"status": "ok", **warm(request)})
            elif kind == "reap":
                reply.update({"status": "ok", **reap(request, exits)})
            elif kind == "fork":
                given, fds = fds[:3], fds[3:]
                if len(given) != 3:
                    for fd in given:
                        os.close(fd)
                    raise JobError(
                        "internal",
                        f"a fork request came with {len(given)} file descriptors, not 3",
                    )
                threads = thread_count()
                if threads > 1:
                    for fd in given:
                        os.close(fd)
                    raise JobError(
                        "internal",
                        f"the zygote runs {threads} threads; forking it is unsafe",
                    )
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    control.detach()
                    os.setpgid(0, 0)
                    stdin, stdout, stderr = given
                    os.dup2(stdin, 0)
                    os.dup2(stderr, 2)
                    os.dup2(stderr, 1)
                    os.close(stdin)
                    os.close(stderr)
                    old, protocol.PROTOCOL_OUT = (
                        protocol.PROTOCOL_OUT,
                        os.fdopen(stdout, "w", buffering=1, encoding="utf-8"),
                    )
                    old.close()
                    send(hello())
                    if request.get("zygote"):
                        return zygote_loop()
                    return os.fdopen(0, "r", encoding="utf-8")
                for fd in given:
                    os.close(fd)
                reply.update({"status": "ok", "forked_pid": pid, "threads": threads})
            else:
                raise JobError(
                    "internal", f"a zygote takes warm, fork and reap, not {kind!r}"
                )
        except Exception as error:
            reply.update(error_reply(error))
        send(reply)
