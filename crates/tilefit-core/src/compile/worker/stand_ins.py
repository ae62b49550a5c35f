# --- Stand-ins: torch without its import, tensors, compiler diagnostics, job errors ---------------

import importlib.util
import os
import platform
import sys
import traceback
import types

from .protocol import PROTOCOL


def _torch_stand_in():
    """Triton's HIP backend imports torch only to test `isinstance(arg, torch.Tensor)` while
    specializing pointers. tilefit's stand-in tensors answer `ptr_range()`, which the backend
    reads first, so the check is answered without importing torch (seconds per worker where
    torch is installed); a machine without torch also gets an empty module for the import."""
    try:
        from triton.backends.amd.compiler import HIPBackend
    except Exception:
        HIPBackend = None
    if HIPBackend is not None and hasattr(HIPBackend, "is_within_2gb"):
        original = HIPBackend.is_within_2gb

        def is_within_2gb(arg):
            if isinstance(arg, StandInTensor):
                return arg.ptr_range() <= 2**31 - 1
            return original(arg)

        HIPBackend.is_within_2gb = staticmethod(is_within_2gb)
    if importlib.util.find_spec("torch") is None:
        stand_in = types.ModuleType("torch")
        stand_in.__doc__ = (
            "tilefit stand-in: torch is not installed in this environment"
        )
        stand_in.Tensor = type("Tensor", (), {})
        sys.modules["torch"] = stand_in


_SPECIALIZER_TORCH = types.ModuleType("torch")
_SPECIALIZER_TORCH.__doc__ = (
    "tilefit stand-in, seen only by Triton's native specializer"
)
_SPECIALIZER_TORCH.Tensor = type("Tensor", (), {})


class _WithoutTorchImport:
    """Around a specialization: Triton 3.5+'s native specializer imports `torch` the first time it
    runs in a process, only to register `torch.Tensor` for a fast path (a tensor without it takes
    the `data_ptr` path, with the same result). Where torch is installed that import costs seconds
    and starts torch's thread pools (one per core), which would also make a zygote unsafe to fork.
    While no one has imported torch, the specializer sees a stand-in module instead; the stand-in
    is gone again afterwards, so a kernel or a launch that imports torch later gets the real one."""

    def __enter__(self):
        self._placed = "torch" not in sys.modules
        if self._placed:
            sys.modules["torch"] = _SPECIALIZER_TORCH
        return self

    def __exit__(self, *exc):
        if self._placed and sys.modules.get("torch") is _SPECIALIZER_TORCH:
            del sys.modules["torch"]
        return False


try:
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    IMPORT_ERROR = None
except Exception as error:  # the handshake reports it; every job then fails with it
    IMPORT_ERROR = "".join(traceback.format_exception_only(type(error), error)).strip()
    triton = tl = GPUTarget = ASTSource = make_backend = (
        create_function_from_signature
    ) = None


class StandInTensor:
    """What Triton's specializer reads from a tensor argument: its dtype, its address (for the
    16-byte alignment test) and, on AMD, its pointer range."""

    def __init__(self, dtype, aligned):
        self.dtype = dtype
        self._address = 0 if aligned else 8

    def data_ptr(self):
        return self._address

    @staticmethod
    def ptr_range():
        return 0


class CapturedDiagnostics:
    """Collect what the compiler's C++ layers (MLIR, LLVM, ptxas wrappers) print on file
    descriptor 2 during one compile, so a failure can say more than "PassManager::run failed"."""

    def __enter__(self):
        import tempfile

        sys.stderr.flush()
        self._file = tempfile.TemporaryFile(mode="w+b")
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read().decode("utf-8", "replace")
        self._file.close()
        # Keep the worker's own stderr informative for the pool's error reports (a successful
        # compile's output, ptxas's verbose log, is returned instead).
        if self.text and exc[0] is not None:
            sys.stderr.write(self.text[-4000:])
            sys.stderr.flush()
        return False


def compiler_diagnostic(text):
    """The most telling line the compiler printed: an `error:` line with its message."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if "error:" in line.lower():
            return line
    return lines[-1] if lines else ""


class JobError(Exception):
    def __init__(self, kind, message, detail=""):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail


_modules = {}


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
