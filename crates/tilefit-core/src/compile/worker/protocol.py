"""tilefit's compile worker: JSON lines in on stdin, JSON lines out on stdout.

Requests: `inspect` (a kernel's parameters), `compile` (a spec config, through the JIT's own
specialization), `compile_ir` (a cached kernel's IR file, for replay) and `launch` (a spec config
launched once on the local GPU, for `tilefit verify --launch`).

Embedded in the tilefit binary and run as `python -I -B -u -c <this file>`. The first line it writes
is a handshake; then one reply per request, in order. Only protocol lines go to stdout: file
descriptor 1 is pointed at stderr at start-up, so prints from kernels, Triton or its C++ code can
never corrupt the protocol.

A compile reproduces what Triton's JIT does at a real launch: the kernel's own binder
(`create_function_from_signature`, Triton's specialization code) runs on stand-in arguments built
from the spec's example values (pointers 16-byte aligned unless the spec says otherwise), then
`JITFunction._pack_args` turns the binding into signature, constexprs and attributes, and
`triton.compile(ASTSource(...), target=GPUTarget(...))` compiles for the requested target. The
shared-memory size is `metadata.shared`, the number Triton compares with the device's budget.
"""

import json
import os
import sys

PROTOCOL = 1


def _claim_stdout():
    """Keep a private handle on the real stdout for protocol lines; send fd 1 to stderr."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "w", buffering=1, encoding="utf-8")


PROTOCOL_OUT = None


def read_request(line):
    """A request line, with a non-finite float (JSON has none) written as `{"float": "-inf"}`
    read back as the float."""

    def non_finite(obj):
        if len(obj) == 1 and isinstance(obj.get("float"), str):
            return float(obj["float"])
        return obj

    return json.loads(line, object_hook=non_finite)


def send(message):
    PROTOCOL_OUT.write(json.dumps(message, separators=(",", ":")) + "\n")
    PROTOCOL_OUT.flush()
