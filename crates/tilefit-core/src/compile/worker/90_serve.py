# --- One request in, one reply out; the handshake; the serve loop -------------------------------

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


def error_reply(error):
    """A reply's error fields: a JobError as it says, anything else classified."""
    if isinstance(error, JobError):
        return {"status": "error", "error": {"kind": error.kind, "message": error.message,
                                             "detail": error.detail}}
    kind, message, detail, diagnostic, location = classify(error)
    return {"status": "error", "error": {"kind": kind, "message": message, "detail": detail,
                                         "diagnostic": diagnostic, "location": location}}


def hello():
    return {
        "type": "hello",
        "protocol": PROTOCOL,
        "python": platform.python_version(),
        "triton": None if IMPORT_ERROR else triton.__version__,
        "backends": [] if IMPORT_ERROR else sorted(triton.backends.backends.keys()),
        "import_error": IMPORT_ERROR,
        "pid": os.getpid(),
    }


def serve():
    global PROTOCOL_OUT
    PROTOCOL_OUT = _claim_stdout()
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
