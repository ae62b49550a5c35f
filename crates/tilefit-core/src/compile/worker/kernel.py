# --- Loading a kernel and inspecting its parameters ---------------------------------------------

import hashlib
import importlib.util
import json
import os
import sys
import traceback
import types

from ._jit import unwrap
from .extract import ExtractError, extract, import_module
from .stand_ins import GPUTarget, JobError, _modules, make_backend, tl


def backend_option_names():
    """The compile options each backend of this Triton takes, by backend (`cuda`, `hip`)."""
    names = {}
    for backend_name, target in (
        ("cuda", GPUTarget("cuda", 90, 32)),
        ("hip", GPUTarget("hip", "gfx942", 64)),
    ):
        try:
            names[backend_name] = sorted(
                make_backend(target).parse_options({}).__dict__
            )
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
        "kwargs": [
            [str(k), _plain(v)]
            for k, v in (getattr(config, "kwargs", None) or {}).items()
        ],
        "num_warps": getattr(config, "num_warps", 4),
        "num_stages": getattr(config, "num_stages", 3),
        "num_ctas": getattr(config, "num_ctas", 1),
        "maxnreg": getattr(config, "maxnreg", None),
        "pre_hook": getattr(config, "pre_hook", None) is not None,
    }


def load_function(path, name, load="auto", given=None, module_name=None):
    """The kernel `name` of `path`: its module imported, or (where the import fails and `load`
    allows, or `load` is `extract`) the kernel and what it reaches extracted from the file.
    `given` (`[globals]`) sets module-level names instead of the file's."""
    stat = os.stat(path)
    given = dict(given or {})
    key = (
        path,
        stat.st_mtime_ns,
        stat.st_size,
        load,
        json.dumps(given, sort_keys=True),
        name,
        module_name,
    )
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
                    raise JobError(
                        "bad-kernel",
                        f"importing `{module_name}` failed: {import_error}",
                    )
                loaded["import_error"] = import_error
            else:
                for k, v in values.items():
                    setattr(module, k, v)
        elif load in ("auto", "import"):
            directory = os.path.dirname(path)
            if directory not in sys.path:
                sys.path.insert(0, directory)
            module_name = (
                "tilefit_kernel_" + hashlib.sha256(path.encode()).hexdigest()[:16]
            )
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
                for k, v in values.items():
                    setattr(module, k, v)
            except SyntaxError as error:
                raise JobError(
                    "bad-kernel", f"{path}:{error.lineno}: syntax error: {error.msg}"
                ) from error
            except Exception as error:
                if load == "import":
                    raise JobError(
                        "bad-kernel",
                        f"importing {path} failed: {type(error).__name__}: {error}",
                        traceback.format_exc(),
                    ) from error
                loaded["import_error"] = f"{type(error).__name__}: {error}"
                module = None
        if module is None:
            try:
                namespace, names, digest, peeled = extract(path, name, values)
            except ExtractError as error:
                why = (
                    f"; the plain import failed: {loaded['import_error']}"
                    if "import_error" in loaded
                    else ""
                )
                raise JobError("bad-kernel", f"{error}{why}") from error
            except SyntaxError as error:
                raise JobError(
                    "bad-kernel", f"{path}:{error.lineno}: syntax error: {error.msg}"
                ) from error
            module = types.SimpleNamespace(
                **{k: v for k, v in namespace.items() if not k.startswith("__")}
            )
            loaded.update({"how": "extract", "names": names, "digest": digest})
            if peeled:
                loaded["peeled"] = peeled
        cached = (module, loaded)
        _modules[key] = cached
    module, loaded = cached
    fn = getattr(module, name, None)
    if fn is None:
        raise JobError("bad-spec", f"{path} has no function `{name}`")
    # Unwrapped down to the JITFunction (the package's `_jit.unwrap`, joined into this script).
    jit, autotune_configs, heuristics = unwrap(fn)
    if jit is None:
        raise JobError("bad-spec", f"`{name}` in {path} is not a @triton.jit function")
    return Kernel(jit, autotune_configs, heuristics, loaded)


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
    return load_function(
        request["kernel_file"],
        request["function"],
        request.get("load", "auto"),
        request.get("globals"),
        request.get("module"),
    )


def inspect_kernel(request):
    kernel = _load(request)
    fn, autotune = kernel.fn, kernel.autotune_configs
    heuristic = set(kernel.heuristic_names())
    params = []
    for param in fn.params:
        default = None
        if param.has_default:
            default = (
                param.default
                if isinstance(param.default, (bool, int, float, str, type(None)))
                else repr(param.default)
            )
        params.append(
            {
                "name": param.name,
                "constexpr": bool(param.is_constexpr),
                "has_default": bool(param.has_default),
                "default": default,
                "do_not_specialize": bool(param.do_not_specialize),
                "annotation": str(param.annotation) if param.annotation else "",
                "heuristic": param.name in heuristic,
            }
        )
    return {
        "params": params,
        "autotuned": autotune is not None,
        "backend_options": backend_option_names(),
        "loaded": kernel.loaded,
        "autotune_configs": None
        if autotune is None
        else [autotune_config(c) for c in autotune],
    }
