# --- Compiling through the JIT's own specialization; the early stop; binaries and resources -------

import base64
import os
import time
import types

from .kernel import _load, _plain
from .stand_ins import (
    ASTSource,
    CapturedDiagnostics,
    GPUTarget,
    JobError,
    StandInTensor,
    _WithoutTorchImport,
    compiler_diagnostic,
    create_function_from_signature,
    make_backend,
    tl,
    triton,
)


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
            raise JobError(
                "bad-spec", f"argument `{name}`: `{kind}` is not a Triton pointer type"
            ) from None
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
        raise JobError(
            "bad-spec",
            f"argument `{name}`: Triton {triton.__version__} has no host-side "
            "TensorDescriptor (triton.tools.tensor_descriptor)",
        ) from None
    try:
        dtype = tl.str_to_ty("*" + arg["dtype"], None).element_ty
    except Exception:
        raise JobError(
            "bad-spec",
            f"argument `{name}`: `{arg.get('dtype')}` is not a Triton element type",
        ) from None
    base = StandInTensor(dtype, True)
    try:
        return TensorDescriptor(
            base, list(arg["shape"]), list(arg["strides"]), list(arg["block_shape"])
        )
    except (AssertionError, ValueError, TypeError) as error:
        raise JobError(
            "bad-spec",
            f"argument `{name}`: Triton refuses the descriptor: {error or 'a check failed'}",
        ) from error


def constexpr_value(name, value):
    """A spec constexpr as the launch passes it: `"tl.bfloat16"` is the Triton dtype object."""
    if isinstance(value, str) and value.startswith("tl."):
        dtype = getattr(tl, value[3:], None)
        if not isinstance(dtype, tl.dtype):
            raise JobError(
                "bad-spec",
                f"constexpr `{name}`: `{value}` is not a Triton dtype "
                "(e.g. tl.bfloat16, tl.float16, tl.float8e4nv)",
            )
        return dtype
    return value


def describe_passed(value):
    """What a launch value was, for the report: `tl.bfloat16`, `None`, `TensorDescriptor(...)`."""
    if value is None:
        return "None"
    if isinstance(value, tl.dtype):
        return f"tl.{value}" if not hasattr(value, "name") else f"tl.{value.name}"
    if type(value).__name__ == "TensorDescriptor":
        return (
            f"TensorDescriptor({value.base.dtype}, shape={list(value.shape)}, strides={list(value.strides)}, "
            f"block_shape={list(value.block_shape)})"
        )
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
                raise JobError(
                    "bad-spec",
                    f"the @triton.heuristics value for `{name}` fails on the spec's "
                    f"values ({type(error).__name__}: {error}): give `{name}` in [constexprs]",
                ) from error
            set_by.append(name)
    return set_by


def pack(fn, backend, kwargs, bound, specialization, options):
    if hasattr(fn, "_pack_args"):
        return fn._pack_args(backend, kwargs, bound, specialization, options)
    raise JobError(
        "internal",
        f"Triton {triton.__version__} has no JITFunction._pack_args; "
        "tilefit reproduces the JIT's specialization with the releases that have it (3.5.1 through 3.9.0 are checked)",
    )


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
    arguments = {
        name: stand_in_argument(name, arg) for name, arg in request["args"].items()
    }
    given = dict(request["constexprs"])
    arguments.update(
        {name: constexpr_value(name, value) for name, value in given.items()}
    )
    heuristic_names = apply_heuristics(
        kernel_info, arguments, set(given) | set(request["args"])
    )
    options, ignored_options = backend_options(backend, dict(request["options"]))
    options.setdefault("debug", bool(getattr(fn, "debug", False)))
    known = {p.name for p in fn.params}
    missing = [
        p.name for p in fn.params if p.name not in arguments and not p.has_default
    ]
    if missing:
        raise JobError(
            "bad-spec",
            "the spec gives no value for " + ", ".join(f"`{m}`" for m in missing),
        )
    unknown = [name for name in arguments if name not in known]
    if unknown:
        raise JobError(
            "bad-spec",
            "the kernel has no parameter " + ", ".join(f"`{u}`" for u in unknown),
        )
    # Heuristics may set names the kernel does not take (Triton passes them on and the binder
    # ignores them only if they are options); keep the kernel's own parameters.
    for name in heuristic_names:
        if name not in known:
            arguments.pop(name, None)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    try:
        with _WithoutTorchImport():
            bound, specialization, binder_options = binder(**arguments, **options)
        packed_options, signature, constexprs, attrs = pack(
            fn, backend, options, bound, specialization, binder_options
        )
    except (KeyError, TypeError, ValueError) as error:
        raise JobError(
            "bad-spec", f"{type(error).__name__}: {error}".replace('"', "'")
        ) from error
    specialized = time.perf_counter()
    source = ASTSource(fn, signature, constexprs, attrs)
    full = (
        bool(request.get("full"))
        or bool(request.get("binary_dir"))
        or bool(request.get("resources"))
    )
    kernel, log = compile_capturing(source, target, packed_options.__dict__, full=full)
    compiled = time.perf_counter()
    names = [p.name for p in fn.params]
    divisible = sorted(
        names[path[0]]
        for path, attr in attrs.items()
        if any(a[0] == "tt.divisibility" for a in attr)
    )
    constant_ones = sorted(
        names[path[0]]
        for path, value in constexprs.items()
        if not fn.params[path[0]].is_constexpr and value == 1
    )
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
        "timings": {
            "specialize_s": specialized - started,
            "compile_s": compiled - specialized,
        },
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
                passed[name] = {
                    "how": "default",
                    "value": _plain(
                        describe_passed(getattr(default, "value", default))
                    ),
                }
            continue
        value = arguments[name]
        if name in heuristic_names:
            passed[name] = {"how": "heuristic", "value": _plain(describe_passed(value))}
        elif value is None:
            passed[name] = {"how": "none", "value": "None"}
        elif isinstance(value, tl.dtype):
            written = request["constexprs"].get(name)
            passed[name] = {
                "how": "dtype",
                "value": written
                if isinstance(written, str)
                else describe_passed(value),
            }
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
    path = os.path.join(
        directory,
        f"{kernel.metadata.name}-{os.getpid()}-{time.perf_counter_ns()}.cubin",
    )
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

    for backend_class in {
        type(make_backend(GPUTarget("cuda", 90, 32))),
        type(make_backend(GPUTarget("hip", "gfx942", 64))),
    }:
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
        self.metadata = types.SimpleNamespace(
            shared=done.shared,
            tmem_size=done.tmem_size,
            num_warps=options.get("num_warps"),
            num_stages=options.get("num_stages"),
            name=None,
        )
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
        raise CompileFailed(
            error, compiler_diagnostic(getattr(diagnostics, "text", ""))
        ) from error
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


def compile_ir(request):
    """Recompile a cached kernel from its IR file for another target. Only the IR is read: nothing
    from the cache is imported or executed."""
    path = request["ir_file"]
    if not path.endswith((".ttir", ".ttgir")):
        raise JobError("bad-spec", f"{path} is not a Triton IR file")
    target = target_of(request["target"])
    started = time.perf_counter()
    full = (
        bool(request.get("full"))
        or bool(request.get("binary_dir"))
        or bool(request.get("resources"))
    )
    kernel, log = compile_capturing(path, target, dict(request["options"]), full=full)
    compiled = time.perf_counter()
    metadata = kernel.metadata
    return {
        **keep_binary(request, kernel),
        **binary_resources(request, kernel, log),
        "shared": int(metadata.shared),
        "num_warps": int(
            metadata.num_warps or request["options"].get("num_warps") or 4
        ),
        "num_stages": int(
            metadata.num_stages or request["options"].get("num_stages") or 0
        ),
        "tmem_size": getattr(metadata, "tmem_size", None),
        "timings": {"compile_s": compiled - started},
    }
