# --- One request in, one reply out; the handshake; the serve loop -------------------------------

import os
import sys

from . import protocol
from .compiling import _install_early_stop, _keep_ptxas_log, compile_ir, compile_job
from .errors import error_reply
from .kernel import inspect_kernel
from .launch import launch_job
from .protocol import _claim_stdout, read_request, send
from .stand_ins import IMPORT_ERROR, JobError, _torch_stand_in, hello
from .zygote import zygote_loop


def handle(request):
    """One request in, one reply out."""
    reply = {"type": "reply", "id": request.get("id"), "pid": os.getpid()}
    try:
        if IMPORT_ERROR is not None:
            raise JobError("toolchain", f"triton does not import: {IMPORT_ERROR}")
        if request.get("type") == "inspect":
            body = inspect_kernel(request)
        elif request.get("type") == "compile":
            body = compile_job(request)
        elif request.get("type") == "compile_ir":
            body = compile_ir(request)
        elif request.get("type") == "launch":
            body = launch_job(request)
        else:
            raise JobError("internal", f"unknown request type {request.get('type')!r}")
        reply.update({"status": "ok", **body})
    except Exception as error:
        reply.update(error_reply(error))
    return reply


def serve():
    protocol.PROTOCOL_OUT = _claim_stdout()
    send(hello())
    if IMPORT_ERROR is None:
        _torch_stand_in()
        _install_early_stop()
        _keep_ptxas_log()
    lines = sys.stdin
    if os.environ.get("TILEFIT_ZYGOTE") == "1":
        lines = zygote_loop()
        if lines is None:
            return
    for line in lines:
        if not line.strip():
            continue
        send(handle(read_request(line)))


if __name__ == "__main__":
    serve()
