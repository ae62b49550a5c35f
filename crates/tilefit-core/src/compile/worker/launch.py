# --- Launching a compiled config once on the local GPU (`tilefit verify --launch`) ---------------

from .compiling import apply_heuristics, constexpr_value
from .kernel import _load
from .stand_ins import JobError, tl


def launch_job(request):
    """Launch a spec config once on the local GPU through Triton's JIT, on zero-filled scratch
    buffers of `buffer_bytes` each (the spec's [launch] table), with the spec's scalar values.
    Needs torch and a GPU; reports whether the launch went through or what refused it."""
    try:
        import torch
    except ImportError:
        raise JobError("toolchain", "launching needs torch in this Python") from None
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

            torch_dtype = getattr(
                torch,
                {
                    "bf16": "bfloat16",
                    "fp16": "float16",
                    "fp32": "float32",
                    "fp8e4nv": "float8_e4m3fn",
                    "fp8e5": "float8_e5m2",
                }.get(arg["dtype"], "uint8"),
            )
            numel = 1
            for extent in arg["shape"]:
                numel *= int(extent)
            base = torch.zeros(numel, dtype=torch_dtype, device="cuda")
            arguments[name] = TensorDescriptor(
                base, list(arg["shape"]), list(arg["strides"]), list(arg["block_shape"])
            )
        elif arg["type"].startswith("*"):
            dtype = tl.str_to_ty(arg["type"], None).element_ty
            raw = torch.zeros(
                int(request["buffer_bytes"]), dtype=torch.uint8, device="cuda"
            )
            torch_dtype = getattr(
                torch,
                {
                    "bf16": "bfloat16",
                    "fp16": "float16",
                    "fp32": "float32",
                    "fp64": "float64",
                    "int32": "int32",
                    "int64": "int64",
                    "int8": "int8",
                    "int16": "int16",
                    "uint8": "uint8",
                    "int1": "bool",
                    "fp8e4nv": "float8_e4m3fn",
                    "fp8e5": "float8_e5m2",
                }.get(str(dtype), "uint8"),
            )
            arguments[name] = raw.view(torch_dtype)
        else:
            arguments[name] = arg.get("value", 1.0)
    arguments.update(
        {
            name: constexpr_value(name, value)
            for name, value in request["constexprs"].items()
        }
    )
    # The heuristics run on the real tensors, as `Heuristics.run` does before the JIT.
    for name in apply_heuristics(
        kernel_info, arguments, set(request["constexprs"]) | set(request["args"])
    ):
        if name not in {p.name for p in fn.params}:
            arguments.pop(name, None)
    grid = tuple(request.get("grid") or (1,))
    try:
        compiled = fn[grid](**arguments, **request["options"])
        torch.cuda.synchronize()
    except Exception as error:
        return {
            "launched": False,
            "launch_error": f"{type(error).__name__}: {str(error).splitlines()[0]}",
        }
    return {"launched": True, "shared": int(compiled.metadata.shared)}
