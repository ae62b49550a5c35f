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

import base64
import hashlib
import importlib.util
import json
import os
import platform
import sys
import time
import traceback
import types

PROTOCOL = 1


def _claim_stdout():
    """Keep a private handle on the real stdout for protocol lines; send fd 1 to stderr."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "w", buffering=1, encoding="utf-8")


PROTOCOL_OUT = None


def send(message):
    PROTOCOL_OUT.write(json.dumps(message, separators=(",", ":")) + "\n")
    PROTOCOL_OUT.flush()


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
        stand_in.__doc__ = "tilefit stand-in: torch is not installed in this environment"
        stand_in.Tensor = type("Tensor", (), {})
        sys.modules["torch"] = stand_in


_SPECIALIZER_TORCH = types.ModuleType("torch")
_SPECIALIZER_TORCH.__doc__ = "tilefit stand-in, seen only by Triton's native specializer"
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
    from triton.runtime.jit import JITFunction, create_function_from_signature

    IMPORT_ERROR = None
except Exception as error:  # the handshake reports it; every job then fails with it
    IMPORT_ERROR = "".join(traceback.format_exception_only(type(error), error)).strip()


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


def load_function(path, name, load="auto", given=None, module_name=None):
    """The kernel `name` of `path`: its module imported, or (where the import fails and `load`
    allows, or `load` is `extract`) the kernel and what it reaches extracted from the file.
    `given` (`[globals]`) sets module-level names instead of the file's."""
    stat = os.stat(path)
    given = dict(given or {})
    key = (path, stat.st_mtime_ns, stat.st_size, load, json.dumps(given, sort_keys=True), name, module_name)
    cached = _modules.get(key)
    if cached is None:
        values = {k: _global_value(v) for k, v in given.items()}
        loaded = {"how": "import"}
        module = None
        if module_name and load in ("auto", "import"):
            # An installed package's module: imported by its name, as the engine imports it.
            module, import_error = import_module(module_name)
            if module is None:
                if load == "import":
                    raise JobError("bad-kernel", f"importing `{module_name}` failed: {import_error}")
                loaded["import_error"] = import_error
            else:
                for k, v in values.items():
                    setattr(module, k, v)
        elif load in ("auto", "import"):
            directory = os.path.dirname(path)
            if directory not in sys.path:
                sys.path.insert(0, directory)
            module_name = "tilefit_kernel_" + hashlib.sha256(path.encode()).hexdigest()[:16]
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
                for k, v in values.items():
                    setattr(module, k, v)
            except SyntaxError as error:
                raise JobError("bad-kernel", f"{path}:{error.lineno}: syntax error: {error.msg}")
            except Exception as error:
                if load == "import":
                    raise JobError("bad-kernel", f"importing {path} failed: {type(error).__name__}: {error}",
                                   traceback.format_exc())
                loaded["import_error"] = f"{type(error).__name__}: {error}"
                module = None
        if module is None:
            try:
                namespace, names, digest = extract(path, name, values)
            except ExtractError as error:
                why = f"; the plain import failed: {loaded['import_error']}" if "import_error" in loaded else ""
                raise JobError("bad-kernel", f"{error}{why}")
            except SyntaxError as error:
                raise JobError("bad-kernel", f"{path}:{error.lineno}: syntax error: {error.msg}")
            module = types.SimpleNamespace(**{k: v for k, v in namespace.items() if not k.startswith("__")})
            loaded.update({"how": "extract", "names": names, "digest": digest})
        cached = (module, loaded)
        _modules[key] = cached
    module, loaded = cached
    fn = getattr(module, name, None)
    if fn is None:
        raise JobError("bad-spec", f"{path} has no function `{name}`")
    autotune_configs = None
    heuristics = []
    # Unwrap @triton.autotune / @triton.heuristics down to the JITFunction. Heuristics run
    # outermost first at a launch, each seeing what the outer ones set.
    while not isinstance(fn, JITFunction) and hasattr(fn, "fn"):
        if autotune_configs is None and hasattr(fn, "configs"):
            autotune_configs = fn.configs
        if isinstance(getattr(fn, "values", None), dict):
            heuristics.append(fn.values)
        fn = fn.fn
    if not isinstance(fn, JITFunction):
        raise JobError("bad-spec", f"`{name}` in {path} is not a @triton.jit function")
    return Kernel(fn, autotune_configs, heuristics, loaded)


def _global_value(value):
    """A `[globals]` value as the kernel reads it: `tl.` dtype names as dtypes, the rest as
    `tl.constexpr` (the only globals a JIT function may read)."""
    if isinstance(value, str) and value.startswith("tl."):
        dtype = getattr(tl, value[3:], None)
        if isinstance(dtype, tl.dtype):
            return dtype
    return tl.constexpr(value)


class Kernel:
    """A loaded kernel: the JITFunction, its autotune list and its heuristics (outermost first)."""

    def __init__(self, fn, autotune_configs, heuristics, loaded):
        self.fn = fn
        self.autotune_configs = autotune_configs
        self.heuristics = heuristics
        self.loaded = loaded

    def heuristic_names(self):
        return [name for values in self.heuristics for name in values]


def _load(request):
    return load_function(request["kernel_file"], request["function"], request.get("load", "auto"),
                         request.get("globals"), request.get("module"))


def inspect_kernel(request):
    kernel = _load(request)
    fn, autotune = kernel.fn, kernel.autotune_configs
    heuristic = set(kernel.heuristic_names())
    params = []
    for param in fn.params:
        default = None
        if param.has_default:
            default = param.default if isinstance(param.default, (bool, int, float, str, type(None))) else repr(
                param.default)
        params.append({
            "name": param.name,
            "constexpr": bool(param.is_constexpr),
            "has_default": bool(param.has_default),
            "default": default,
            "do_not_specialize": bool(param.do_not_specialize),
            "annotation": str(param.annotation) if param.annotation else "",
            "heuristic": param.name in heuristic,
        })
    return {"params": params, "autotuned": autotune is not None, "backend_options": backend_option_names(),
            "loaded": kernel.loaded,
            "autotune_configs": None if autotune is None else [autotune_config(c) for c in autotune]}


def backend_option_names():
    """The compile options each backend of this Triton takes, by backend (`cuda`, `hip`)."""
    names = {}
    for backend_name, target in (("cuda", GPUTarget("cuda", 90, 32)), ("hip", GPUTarget("hip", "gfx942", 64))):
        try:
            names[backend_name] = sorted(make_backend(target).parse_options({}).__dict__)
        except Exception:
            continue
    return names


def _plain(value):
    """A config value as JSON: numbers, strings, booleans and None as they are, anything else by
    its repr (tilefit reports it as a value it cannot pass)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return {"unsupported": repr(value)}


def autotune_config(config):
    """One `triton.Config` of an @triton.autotune list: its meta-parameters and options."""
    return {
        # Pairs, not an object: the order the author wrote them in is the order reports show.
        "kwargs": [[str(k), _plain(v)] for k, v in (getattr(config, "kwargs", None) or {}).items()],
        "num_warps": getattr(config, "num_warps", 4),
        "num_stages": getattr(config, "num_stages", 3),
        "num_ctas": getattr(config, "num_ctas", 1),
        "maxnreg": getattr(config, "maxnreg", None),
        "pre_hook": getattr(config, "pre_hook", None) is not None,
    }


def target_of(spec):
    if spec["backend"] == "cuda":
        arch = spec["arch"]
        if not arch.startswith("sm_"):
            raise JobError("bad-spec", f"CUDA arch `{arch}` must look like sm_90")
        return GPUTarget("cuda", int(arch[3:].rstrip("af")), spec["warp_size"])
    return GPUTarget("hip", spec["arch"], spec["warp_size"])


def stand_in_argument(name, arg):
    kind = arg["type"]
    if kind == "none":
        # Passed as None at launch: the JIT makes it a constexpr None.
        return None
    if kind == "tensordesc":
        return stand_in_descriptor(name, arg)
    if kind.startswith("*"):
        try:
            # Triton's own parser of signature strings: "*bf16", "*fp8e4nv", "*i32", "*k..." (const).
            dtype = tl.str_to_ty(kind, None).element_ty
        except Exception:
            raise JobError("bad-spec", f"argument `{name}`: `{kind}` is not a Triton pointer type")
        return StandInTensor(dtype, arg.get("aligned", True))
    if "value" not in arg:
        raise JobError("bad-spec", f"argument `{name}` ({kind}) needs an example value")
    return arg["value"]


def stand_in_descriptor(name, arg):
    """A host-side `TensorDescriptor` over a stand-in tensor, built by Triton's own class so its
    checks (block shape, alignment, contiguity) apply to the spec's values."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        raise JobError("bad-spec", f"argument `{name}`: Triton {triton.__version__} has no host-side "
                       "TensorDescriptor (triton.tools.tensor_descriptor)")
    try:
        dtype = tl.str_to_ty("*" + arg["dtype"], None).element_ty
    except Exception:
        raise JobError("bad-spec", f"argument `{name}`: `{arg.get('dtype')}` is not a Triton element type")
    base = StandInTensor(dtype, True)
    try:
        return TensorDescriptor(base, list(arg["shape"]), list(arg["strides"]), list(arg["block_shape"]))
    except (AssertionError, ValueError, TypeError) as error:
        raise JobError("bad-spec", f"argument `{name}`: Triton refuses the descriptor: {error or 'a check failed'}")


def constexpr_value(name, value):
    """A spec constexpr as the launch passes it: `"tl.bfloat16"` is the Triton dtype object."""
    if isinstance(value, str) and value.startswith("tl."):
        dtype = getattr(tl, value[3:], None)
        if not isinstance(dtype, tl.dtype):
            raise JobError("bad-spec", f"constexpr `{name}`: `{value}` is not a Triton dtype "
                           "(e.g. tl.bfloat16, tl.float16, tl.float8e4nv)")
        return dtype
    return value


def describe_passed(value):
    """What a launch value was, for the report: `tl.bfloat16`, `None`, `TensorDescriptor(...)`."""
    if value is None:
        return "None"
    if isinstance(value, tl.dtype):
        return f"tl.{value}" if not hasattr(value, "name") else f"tl.{value.name}"
    if type(value).__name__ == "TensorDescriptor":
        return (f"TensorDescriptor({value.base.dtype}, shape={list(value.shape)}, strides={list(value.strides)}, "
                f"block_shape={list(value.block_shape)})")
    if isinstance(value, StandInTensor):
        return f"tensor({value.dtype})"
    return value


def apply_heuristics(kernel, arguments, given):
    """Evaluate `@triton.heuristics` the way `Heuristics.run` does at a launch, on the spec's values.
    A value the spec gives itself wins (and is reported as given). Returns the names it set."""
    set_by = []
    for values in kernel.heuristics:
        for name, heuristic in values.items():
            if name in given:
                continue
            try:
                arguments[name] = heuristic(dict(arguments))
            except Exception as error:
                raise JobError("bad-spec", f"the @triton.heuristics value for `{name}` fails on the spec's "
                               f"values ({type(error).__name__}: {error}): give `{name}` in [constexprs]")
            set_by.append(name)
    return set_by


def pack(fn, backend, kwargs, bound, specialization, options):
    if hasattr(fn, "_pack_args"):
        return fn._pack_args(backend, kwargs, bound, specialization, options)
    raise JobError("internal", f"Triton {triton.__version__} has no JITFunction._pack_args; "
                   "tilefit reproduces the JIT's specialization with the releases that have it (3.5.1, 3.6.0 and 3.7.1 are checked)")


def backend_options(backend, options):
    """Split options into those this backend takes and the others (an AMD entry's `kpack` or
    `waves_per_eu` on an NVIDIA target): the JIT would refuse the others by name."""
    known = set(backend.parse_options({}).__dict__)
    taken = {k: v for k, v in options.items() if k in known}
    return taken, sorted(k for k in options if k not in known)


def compile_job(request):
    kernel_info = _load(request)
    fn = kernel_info.fn
    target = target_of(request["target"])
    backend = make_backend(target)
    started = time.perf_counter()
    arguments = {name: stand_in_argument(name, arg) for name, arg in request["args"].items()}
    given = dict(request["constexprs"])
    arguments.update({name: constexpr_value(name, value) for name, value in given.items()})
    heuristic_names = apply_heuristics(kernel_info, arguments, set(given) | set(request["args"]))
    options, ignored_options = backend_options(backend, dict(request["options"]))
    options.setdefault("debug", bool(getattr(fn, "debug", False)))
    known = {p.name for p in fn.params}
    missing = [p.name for p in fn.params if p.name not in arguments and not p.has_default]
    if missing:
        raise JobError("bad-spec", "the spec gives no value for " + ", ".join(f"`{m}`" for m in missing))
    unknown = [name for name in arguments if name not in known]
    if unknown:
        raise JobError("bad-spec", "the kernel has no parameter " + ", ".join(f"`{u}`" for u in unknown))
    # Heuristics may set names the kernel does not take (Triton passes them on and the binder
    # ignores them only if they are options); keep the kernel's own parameters.
    for name in heuristic_names:
        if name not in known:
            arguments.pop(name, None)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    try:
        with _WithoutTorchImport():
            bound, specialization, binder_options = binder(**arguments, **options)
        packed_options, signature, constexprs, attrs = pack(fn, backend, options, bound, specialization,
                                                            binder_options)
    except (KeyError, TypeError, ValueError) as error:
        raise JobError("bad-spec", f"{type(error).__name__}: {error}".replace('"', "'"))
    specialized = time.perf_counter()
    source = ASTSource(fn, signature, constexprs, attrs)
    full = bool(request.get("full")) or bool(request.get("binary_dir")) or bool(request.get("resources"))
    kernel, log = compile_capturing(source, target, packed_options.__dict__, full=full)
    compiled = time.perf_counter()
    names = [p.name for p in fn.params]
    divisible = sorted(names[path[0]] for path, attr in attrs.items()
                       if any(a[0] == "tt.divisibility" for a in attr))
    constant_ones = sorted(names[path[0]] for path, value in constexprs.items()
                           if not fn.params[path[0]].is_constexpr and value == 1)
    metadata = kernel.metadata
    return {
        **keep_binary(request, kernel),
        **binary_resources(request, kernel, log),
        "passed": passed_values(fn, arguments, request, heuristic_names),
        "ignored_options": ignored_options,
        "shared": int(metadata.shared),
        "num_warps": int(packed_options.num_warps),
        "num_stages": int(packed_options.num_stages),
        "tmem_size": getattr(metadata, "tmem_size", None),
        "signature": {k: v for k, v in signature.items() if v != "constexpr"},
        "divisible_by_16": divisible,
        "specialized_to_1": constant_ones,
        "timings": {"specialize_s": specialized - started, "compile_s": compiled - specialized},
    }


def passed_values(fn, arguments, request, heuristic_names):
    """What the launch passed where it is more than a plain value: dtype constexprs, None
    arguments, tensor descriptors, heuristics' values and signature defaults."""
    passed = {}
    for param in fn.params:
        name = param.name
        if name not in arguments:
            if param.has_default:
                default = param.default
                passed[name] = {"how": "default", "value": _plain(describe_passed(getattr(default, "value", default)))}
            continue
        value = arguments[name]
        if name in heuristic_names:
            passed[name] = {"how": "heuristic", "value": _plain(describe_passed(value))}
        elif value is None:
            passed[name] = {"how": "none", "value": "None"}
        elif isinstance(value, tl.dtype):
            written = request["constexprs"].get(name)
            passed[name] = {"how": "dtype", "value": written if isinstance(written, str) else describe_passed(value)}
        elif type(value).__name__ == "TensorDescriptor":
            passed[name] = {"how": "tensor-descriptor", "value": describe_passed(value)}
    return passed


class CompileFailed(Exception):
    """A compile error with the compiler's own diagnostic attached."""

    def __init__(self, error, diagnostic):
        super().__init__(str(error))
        self.error = error
        self.diagnostic = diagnostic


def keep_binary(request, kernel):
    """With `binary_dir` in the request, write the cubin where tilefit verify will load it."""
    directory = request.get("binary_dir")
    if not directory or "cubin" not in kernel.asm:
        return {}
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{kernel.metadata.name}-{os.getpid()}-{time.perf_counter_ns()}.cubin")
    with open(path, "wb") as out:
        out.write(kernel.asm["cubin"])
    return {"binary": path, "kernel_name": kernel.metadata.name}


class AllocationDone(Exception):
    """Raised inside the backend's llir stage once shared memory is allocated: the size is known
    and everything after (LLVM lowering, ptx, cubin) only serves code generation."""

    def __init__(self, module):
        super().__init__("shared memory allocated")
        self.shared = int(module.get_int_attr("ttg.shared") or 0)
        try:
            self.tmem_size = module.get_int_attr("ttg.tensor_memory_size")
        except Exception:
            self.tmem_size = None


# The early stop follows each Triton version's own llir pass list instead of copying it: every
# `add_*` pass function of Triton's pass namespaces is wrapped once; inside the llir stage of a
# compile that asked for it, the first pass added after the shared-memory allocation (other than
# further allocations) runs the passes queued so far, reads `ttg.shared` and stops the compile.
# Outside that window the wrappers only forward. If a Triton version names its passes so that the
# window never opens, the compile simply runs to the end: a full compile, never a wrong size.
EARLY = {"wanted": False, "active": False, "allocated": False, "module": None}


def _run_pass_manager(pm, module):
    try:
        pm.run(module, "make_llir")
    except TypeError:
        pm.run(module)


def _wrap_pass(name, function):
    def add(pm, *args, **kwargs):
        if EARLY["active"] and EARLY["allocated"] and "allocate" not in name:
            _run_pass_manager(pm, EARLY["module"])
            raise AllocationDone(EARLY["module"])
        result = function(pm, *args, **kwargs)
        if EARLY["active"] and "allocate_shared_memory" in name:
            EARLY["allocated"] = True
        return result

    add.__name__ = name
    add.__doc__ = getattr(function, "__doc__", None)
    return add


def _install_early_stop():
    import triton._C.libtriton as libtriton
    roots = [getattr(libtriton, "passes", None)]
    for backend in ("nvidia", "amd"):
        roots.append(getattr(getattr(libtriton, backend, None), "passes", None))
    for root in filter(None, roots):
        for namespace_name in dir(root):
            namespace = getattr(root, namespace_name)
            if not isinstance(namespace, types.ModuleType):
                continue
            for name in dir(namespace):
                if name.startswith("add_") and callable(getattr(namespace, name)):
                    setattr(namespace, name, _wrap_pass(name, getattr(namespace, name)))
    from triton.backends.compiler import BaseBackend
    for backend_class in {type(make_backend(GPUTarget("cuda", 90, 32))), type(make_backend(GPUTarget("hip", "gfx942", 64)))}:
        original = backend_class.add_stages

        def add_stages(self, stages, options, *rest, __original=original):
            __original(self, stages, options, *rest)
            if "llir" not in stages:
                return
            inner = stages["llir"]

            def llir(src, metadata):
                EARLY.update(active=EARLY["wanted"], allocated=False, module=src)
                try:
                    return inner(src, metadata)
                finally:
                    EARLY.update(active=False, allocated=False, module=None)

            stages["llir"] = llir

        backend_class.add_stages = add_stages
    del BaseBackend


class SizeOnly:
    """What an early-stopped compile leaves: the sizes, no binary."""

    def __init__(self, done, options):
        self.metadata = types.SimpleNamespace(shared=done.shared, tmem_size=done.tmem_size,
                                              num_warps=options.get("num_warps"),
                                              num_stages=options.get("num_stages"), name=None)
        self.asm = {}


def compile_capturing(source, target, options, full=True):
    """Compile; returns the kernel and what the compiler printed (ptxas's verbose log among it)."""
    diagnostics = CapturedDiagnostics()
    EARLY["wanted"] = not full
    try:
        with diagnostics:
            kernel = triton.compile(source, target=target, options=options)
        return kernel, diagnostics.text
    except AllocationDone as done:
        return SizeOnly(done, options), ""
    except Exception as error:
        raise CompileFailed(error, compiler_diagnostic(getattr(diagnostics, "text", ""))) from error
    finally:
        EARLY["wanted"] = False


def binary_resources(request, kernel, log):
    """With `resources` in the request, the binary itself (base64) and ptxas's log, for tilefit to
    read registers, stack frame and spills from."""
    if not request.get("resources"):
        return {}
    for key in ("cubin", "hsaco"):
        binary = kernel.asm.get(key)
        if binary:
            return {
                "binary_format": key,
                "binary_base64": base64.b64encode(binary).decode("ascii"),
                "compiler_log": log[-65536:],
                "kernel_name": kernel.metadata.name,
            }
    return {}


def _keep_ptxas_log():
    """Ask Triton to print ptxas's verbose log (it always runs ptxas with -v); the print lands in
    the captured diagnostics. Triton versions without the knob simply leave spills unknown."""
    try:
        triton.knobs.nvidia.dump_ptxas_log = True
    except Exception:
        pass


def launch_job(request):
    """Launch a spec config once on the local GPU through Triton's JIT, on zero-filled scratch
    buffers of `buffer_bytes` each (the spec's [launch] table), with the spec's scalar values.
    Needs torch and a GPU; reports whether the launch went through or what refused it."""
    try:
        import torch
    except ImportError:
        raise JobError("toolchain", "launching needs torch in this Python")
    if not torch.cuda.is_available():
        raise JobError("toolchain", "launching needs a GPU torch can see")
    kernel_info = _load(request)
    fn = kernel_info.fn
    arguments = {}
    for name, arg in request["args"].items():
        if arg["type"] == "none":
            arguments[name] = None
        elif arg["type"] == "tensordesc":
            from triton.tools.tensor_descriptor import TensorDescriptor
            torch_dtype = getattr(torch, {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32",
                                          "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}.get(arg["dtype"], "uint8"))
            numel = 1
            for extent in arg["shape"]:
                numel *= int(extent)
            base = torch.zeros(numel, dtype=torch_dtype, device="cuda")
            arguments[name] = TensorDescriptor(base, list(arg["shape"]), list(arg["strides"]), list(arg["block_shape"]))
        elif arg["type"].startswith("*"):
            dtype = tl.str_to_ty(arg["type"], None).element_ty
            raw = torch.zeros(int(request["buffer_bytes"]), dtype=torch.uint8, device="cuda")
            torch_dtype = getattr(torch, {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32",
                                          "fp64": "float64", "int32": "int32", "int64": "int64", "int8": "int8",
                                          "int16": "int16", "uint8": "uint8", "int1": "bool",
                                          "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}.get(str(dtype), "uint8"))
            arguments[name] = raw.view(torch_dtype)
        else:
            arguments[name] = arg.get("value", 1.0)
    arguments.update({name: constexpr_value(name, value) for name, value in request["constexprs"].items()})
    # The heuristics run on the real tensors, as `Heuristics.run` does before the JIT.
    for name in apply_heuristics(kernel_info, arguments, set(request["constexprs"]) | set(request["args"])):
        if name not in {p.name for p in fn.params}:
            arguments.pop(name, None)
    grid = tuple(request.get("grid") or (1,))
    try:
        compiled = fn[grid](**arguments, **request["options"])
        torch.cuda.synchronize()
    except Exception as error:
        return {"launched": False, "launch_error": f"{type(error).__name__}: {str(error).splitlines()[0]}"}
    return {"launched": True, "shared": int(compiled.metadata.shared)}


def compile_ir(request):
    """Recompile a cached kernel from its IR file for another target. Only the IR is read: nothing
    from the cache is imported or executed."""
    path = request["ir_file"]
    if not path.endswith((".ttir", ".ttgir")):
        raise JobError("bad-spec", f"{path} is not a Triton IR file")
    target = target_of(request["target"])
    started = time.perf_counter()
    full = bool(request.get("full")) or bool(request.get("binary_dir")) or bool(request.get("resources"))
    kernel, log = compile_capturing(path, target, dict(request["options"]), full=full)
    compiled = time.perf_counter()
    metadata = kernel.metadata
    return {
        **keep_binary(request, kernel),
        **binary_resources(request, kernel, log),
        "shared": int(metadata.shared),
        "num_warps": int(metadata.num_warps or request["options"].get("num_warps") or 4),
        "num_stages": int(metadata.num_stages or request["options"].get("num_stages") or 0),
        "tmem_size": getattr(metadata, "tmem_size", None),
        "timings": {"compile_s": compiled - started},
    }


UNSUPPORTED_MARKERS = ("not supported", "unsupported", "is not available on", "requires compute capability", "only supported on")


def first_line(lines):
    """The first line naming an error, joined with its continuation when it stops mid-sentence
    ("... because", "...:")."""
    for i, line in enumerate(lines):
        if "error" in line.lower():
            if line.rstrip().endswith(("because", ":")) and i + 1 < len(lines):
                return f"{line} {lines[i + 1]}"
            return line
    return lines[0] if lines else ""


def source_location(error):
    """`file.py:LINE:COL` of a CompilationError: its node's line is counted from the `def` line of
    the JIT function whose source it carries, so find that function among the loaded modules."""
    node = getattr(error, "node", None)
    src = getattr(error, "src", None)
    if node is None or src is None or not hasattr(node, "lineno"):
        return None
    for module, _ in list(_modules.values()):
        for value in vars(module).values():
            while not isinstance(value, JITFunction) and hasattr(value, "fn"):
                value = value.fn
            if isinstance(value, JITFunction) and getattr(value, "src", None) == src:
                raw = "".join(getattr(value, "raw_src", []) or [])
                before_def = 0
                for line in raw.splitlines():
                    if line.lstrip().startswith("def "):
                        break
                    before_def += 1
                line = value.starting_line_number + before_def + node.lineno - 1
                code = getattr(value.fn, "__code__", None)
                path = code.co_filename if code is not None else "?"
                src_lines = src.split("\n")
                text = src_lines[node.lineno - 1].strip() if 0 < node.lineno <= len(src_lines) else ""
                return {"file": path, "line": line, "column": node.col_offset + 1, "text": text}
    return None


def compilation_errors(error):
    """The chain of CompilationErrors, outermost first (a call into a JIT helper nests them)."""
    chain = []
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if type(error).__name__ in ("CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"):
            chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def classify(error):
    """(kind, one-line reason, traceback, the compiler's whole diagnostic, source location)."""
    detail = traceback.format_exc()
    diagnostic = ""
    if isinstance(error, CompileFailed):
        diagnostic = error.diagnostic
        error = error.error
    cause = error.__cause__ or error.__context__
    text = str(cause) if cause is not None and type(error).__name__ == "CompilationError" else str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if type(error).__name__ == "CompilationError" and cause is None and lines:
        # "at 12:4:\n<source>\n^\nValueError(...)": the last line is the error itself.
        first = lines[-1]
    else:
        first = first_line(lines) or type(error).__name__
    if diagnostic and diagnostic not in first:
        # "PassManager::run failed" says nothing; the compiler's own line says what failed.
        first = f"{first}: {diagnostic}"
    lowered = (text + " " + diagnostic).lower()
    kind = "unsupported-on-target" if any(marker in lowered for marker in UNSUPPORTED_MARKERS) else "compile-error"
    chain = compilation_errors(error)
    location = None
    for compilation_error in reversed(chain):  # the innermost names the line that failed
        location = source_location(compilation_error)
        if location:
            break
    whole = "\n\n".join(str(e) for e in chain) if chain else text
    if diagnostic and diagnostic not in whole:
        whole = f"{whole}\n{diagnostic}"
    if chain:
        # The reason is the innermost error's own message, not the "at 13:18:" header.
        inner = chain[-1]
        reason_lines = [l.strip() for l in str(getattr(inner, "error_message", "") or "").splitlines() if l.strip()]
        cause = inner.__cause__
        if not reason_lines and cause is not None:
            reason_lines = [l.strip() for l in str(cause).splitlines() if l.strip()]
        if reason_lines:
            first = reason_lines[-1] if reason_lines[0].startswith("at ") else reason_lines[0]
            if diagnostic and diagnostic not in first:
                first = f"{first}: {diagnostic}"
    return kind, first[:500], detail[-4000:], whole[-16000:], location


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


# --- The zygote ---------------------------------------------------------------------------------
# With TILEFIT_ZYGOTE=1 the process never compiles a user's kernel. tilefit gives it a Unix socket
# as stdin; each `fork` request arrives with three file descriptors (SCM_RIGHTS): the new worker's
# stdin, stdout and stderr (for a `zygote` fork: a control socket, stdout and stderr). The fork
# shares Triton's import and, after a `warm` request, the compiler's first-compile initialisation
# for one arch, copy-on-write. A fork is refused while the process runs more than one thread (an
# MLIR or LLVM thread pool would be copied half-held): tilefit then starts workers the plain way.

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
    folder = tempfile.mkdtemp(prefix="tilefit-warm-")
    path = os.path.join(folder, "tilefit_warm.py")
    with open(path, "w", encoding="utf-8") as file:
        file.write(WARM_SOURCE)
    pointer = {"type": "*fp16", "aligned": True}
    started = time.perf_counter()
    try:
        compile_job({"kernel_file": path, "function": "tilefit_warm", "args": {"a_ptr": pointer, "c_ptr": pointer},
                     "constexprs": {"BLOCK": 32}, "options": {"num_warps": 4, "num_stages": 2},
                     "target": request["target"], "full": False})
    finally:
        # The compile is done and nothing reads the source again: leave nothing in the temp folder.
        import shutil
        shutil.rmtree(folder, ignore_errors=True)
    return {"timings": {"specialize_s": 0.0, "compile_s": time.perf_counter() - started}}


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
    global PROTOCOL_OUT
    import socket
    control = socket.socket(fileno=0)
    pending, fds, exits = b"", [], {}
    while True:
        while b"\n" not in pending:
            data, ancillary, _flags, _address = control.recvmsg(1 << 20, socket.CMSG_SPACE(8 * 4))
            fds.extend(_received_fds(ancillary))
            if not data:
                _sweep(exits)
                return None
            pending += data
        line, pending = pending.split(b"\n", 1)
        if not line.strip():
            continue
        request = json.loads(line)
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
                    raise JobError("internal", f"a fork request came with {len(given)} file descriptors, not 3")
                threads = thread_count()
                if threads > 1:
                    for fd in given:
                        os.close(fd)
                    raise JobError("internal", f"the zygote runs {threads} threads; forking it is unsafe")
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
                    old, PROTOCOL_OUT = PROTOCOL_OUT, os.fdopen(stdout, "w", buffering=1, encoding="utf-8")
                    old.close()
                    send(hello())
                    if request.get("zygote"):
                        return zygote_loop()
                    return os.fdopen(0, "r", encoding="utf-8")
                for fd in given:
                    os.close(fd)
                reply.update({"status": "ok", "forked_pid": pid, "threads": threads})
            else:
                raise JobError("internal", f"a zygote takes warm, fork and reap, not {kind!r}")
        except Exception as error:
            reply.update(error_reply(error))
        send(reply)


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
        send(handle(json.loads(line)))


if __name__ == "__main__":
    serve()
