"""A launched kernel as a self-contained Python file: its own source and the values its names had
at the launch, so a compile outside the script sees exactly what the script's kernel saw.

Triton compiles a ``@triton.jit`` function from its source (``JITFunction.src``) and looks every
other name up in the function's own scope: its ``__globals__`` and its closure
(``get_capture_scope``). That scope is what this module writes out, whatever bound it: a module in
``sys.modules`` or not, ``__main__``, an ``exec``'d namespace, a factory's closure, a conditional
import (``try: from triton.language.extra.libdevice import rsqrt``), an assignment at run time.

Each name the kernel's body reads becomes, in the written file:

- a plain value or a ``tl.constexpr``, ``tl`` dtype, tuple of these: the value itself, as the same
  type (Triton refuses a plain global that is not a constexpr, and so does the compile);
- a module of Triton or of the standard library: imported by its name;
- any other module (an engine's helper module): a module object holding only the attributes the
  kernel reads, each resolved by these same rules, so the engine's module is never imported;
- a Triton builtin (``tl.*``, libdevice): imported from the module that defines it, checked to be
  the same object;
- another ``@triton.jit`` function (or ``triton.constexpr_function``): defined again from its
  source, in a scope of its own, by these same rules.

Anything else raises :class:`NotCarried`, naming the name and its type: the launch is then not
judged, and the report says why.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import math
import sys
import types

from tilefit import _jit

#: What the written file starts with: the one helper that defines a function from its source.
_PRELUDE = '''
import importlib as _importlib
import linecache as _linecache
import types as _types

import triton as _triton
import triton.language as _tl


def _define(kind, name, module, filename, line, source, scope, options):
    """Define `name` from `source` in a namespace of its own (`scope`), registered with linecache
    so Triton's `inspect.getsource` reads it, and wrap it as the script's kernel was."""
    key = f"<tilefit-scope {filename}:{line}:{name}:{len(_linecache.cache)}>"
    text = "\\n" * (line - 1) + source
    _linecache.cache[key] = (len(text), None, text.splitlines(keepends=True), key)
    namespace = {"__name__": module, **scope}
    exec(compile(text, key, "exec"), namespace)
    fn = namespace[name]
    if kind == "constexpr_function":
        return _triton.constexpr_function(fn)
    return _triton.jit(fn, **options)


def _module(name, **attributes):
    module = _types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    return module


def _float(text):
    return float(text)

'''


class NotCarried(Exception):
    """A value the kernel reads that a compile outside the script cannot be given."""


def _is_constexpr(value):
    import triton.language as tl

    return isinstance(value, tl.constexpr)


def _stdlib(name):
    top = name.split(".")[0]
    return top in getattr(sys, "stdlib_module_names", ()) and top not in ("__main__",)


def _triton_module(name):
    return name == "triton" or name.startswith("triton.")


def _resolve(module_name, qualname):
    module = sys.modules.get(module_name)
    value = module
    for part in qualname.split("."):
        if value is None:
            return None
        value = getattr(value, part, None)
    return value


@functools.lru_cache(maxsize=1024)
def _referenced(src):
    """The free names a function's source reads, each with the attribute chains read off it
    (``utils.helper`` gives ``{"utils": frozenset({("helper",)})}``). Parsed once per source:
    every launch of a kernel (every config an autotuner tries) asks again."""
    tree = ast.parse(src)
    function = next(
        (
            n
            for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ),
        None,
    )
    if function is None:
        return {}
    params = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    stored = {
        n.id
        for n in ast.walk(function)
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))
    }
    chains = {}

    def chain_of(node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return node.id, tuple(reversed(parts))
        return None, ()

    seen_attr_roots = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and id(node) not in seen_attr_roots:
            # Only the outermost attribute of a chain: mark the inner ones as seen.
            inner = node.value
            while isinstance(inner, ast.Attribute):
                seen_attr_roots.add(id(inner))
                inner = inner.value
            root, parts = chain_of(node)
            if root is not None:
                chains.setdefault(root, set()).add(parts)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            chains.setdefault(node.id, set()).add(())
    # The decorator list and the defaults are read in the defining scope, not at compile: only
    # the body and the annotations matter, and a parameter or a local hides a global.
    return {
        name: frozenset(parts)
        for name, parts in chains.items()
        if name not in params and name not in stored
    }


class _Writer:
    """Builds the file: one definition per function (shared when reached twice)."""

    def __init__(self):
        self.lines = []
        self.defined = {}
        self.counter = 0
        self.defining = set()

    def value(self, value, where, chains=frozenset({()})):
        """A Python expression that rebuilds ``value`` (read as ``where``) in the written file."""
        import triton.language as tl

        if value is None or isinstance(value, (bool, int, str)):
            return repr(value)
        if isinstance(value, float):
            if math.isfinite(value):
                return repr(value)
            return f"_float({str(value)!r})"
        if _is_constexpr(value):
            return f"_tl.constexpr({self.value(value.value, where)})"
        if isinstance(value, tl.dtype):
            return f"_tl.dtype({value.name!r})"
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            items = ", ".join(self.value(v, where) for v in value)
            return f"({items}{',' if len(value) == 1 else ''})"
        if isinstance(value, types.ModuleType):
            return self.module(value, where, chains)
        if _jit.is_jit(value):
            return self.function(value, "jit")
        constexpr_function = _constexpr_function_type()
        if constexpr_function is not None and isinstance(value, constexpr_function):
            return self.function(value, "constexpr_function")
        module_name = getattr(value, "__module__", None) or ""
        qualname = getattr(value, "__qualname__", None)
        if _triton_module(module_name) and qualname:
            if _resolve(module_name, qualname) is value:
                return f"_importlib.import_module({module_name!r}).{qualname}"
            for name, module in list(sys.modules.items()):
                if _triton_module(name) and getattr(module, qualname, None) is value:
                    return f"_importlib.import_module({name!r}).{qualname}"
        raise NotCarried(
            f"`{where}` is a {type(value).__module__}.{type(value).__qualname__} "
            f"({_short(value)}): tilefit can carry only constexprs, plain values, Triton's "
            "builtins and modules, and @triton.jit functions to a compile"
        )

    def module(self, module, where, chains):
        name = module.__name__
        if (_triton_module(name) or _stdlib(name)) and sys.modules.get(name) is module:
            return f"_importlib.import_module({name!r})"
        if () in chains and not any(chains - {()}):
            # The module itself is used as a value (passed on, compared): not something a
            # kernel can do with an engine's module.
            raise NotCarried(f"`{where}` is the module `{name}`, used whole")
        attributes = {}
        for parts in sorted(p for p in chains if p):
            head, rest = parts[0], parts[1:]
            attributes.setdefault(head, set()).add(rest)
        items = []
        for attr, rest in sorted(attributes.items()):
            if not hasattr(module, attr):
                raise NotCarried(f"`{where}.{attr}` does not exist in `{name}`")
            items.append(
                f"{attr}={self.value(getattr(module, attr), f'{where}.{attr}', frozenset(rest))}"
            )
        return f"_module({name!r}, {', '.join(items)})"

    def function(self, jit, kind):
        key = id(jit)
        if key in self.defined:
            return self.defined[key]
        if key in self.defining:
            raise NotCarried(f"`{jit.fn.__name__}` calls itself")
        self.defining.add(key)
        fn = jit.fn
        scope = (
            jit.get_capture_scope()
            if hasattr(jit, "get_capture_scope")
            else fn.__globals__
        )
        if not hasattr(jit, "get_capture_scope") and fn.__closure__:
            scope = dict(scope)
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                scope[name] = cell.cell_contents
        src = jit.src
        entries = []
        for name, chains in sorted(_referenced(src).items()):
            if name not in scope:
                continue
            entries.append(f"{name!r}: {self.value(scope[name], name, chains)}")
        options = {}
        if kind == "jit":
            for option in ("do_not_specialize", "do_not_specialize_on_alignment"):
                names = [p.name for p in jit.params if getattr(p, option, False)]
                if names:
                    options[option] = names
            for option in ("noinline", "debug"):
                if getattr(jit, option, None) is not None:
                    options[option] = getattr(jit, option)
        line = getattr(jit, "starting_line_number", None) or fn.__code__.co_firstlineno
        self.counter += 1
        var = f"_f{self.counter}"
        self.lines.append(
            f"{var} = _define({kind!r}, {fn.__name__!r}, {fn.__module__!r}, "
            f"{fn.__code__.co_filename!r}, {int(line)}, {src!r},\n"
            f"    {{{', '.join(entries)}}}, {options!r})"
        )
        self.defining.discard(key)
        self.defined[key] = var
        return var


def _constexpr_function_type():
    try:
        from triton.runtime.jit import ConstexprFunction
    except ImportError:
        return None
    return ConstexprFunction


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def scope_file(jit):
    """The Python file that defines ``jit`` (a JITFunction) as the script's run had it, as
    ``(text, digest)``; the kernel is the module-level name ``jit.fn.__name__`` of that file.
    Raises :class:`NotCarried` when a name it reads cannot be carried."""
    writer = _Writer()
    var = writer.function(jit, "jit")
    name = jit.fn.__name__
    where = ascii(jit.fn.__code__.co_filename)
    header = (
        f"# `{name}` of {where}, with the values its names had when the script launched it\n"
        "# (written by `tilefit capture`; it imports only Triton and the standard library).\n"
    )
    text = header + _PRELUDE + "\n".join(writer.lines) + f"\n{name} = {var}\n"
    return text, hashlib.sha256(text.encode()).hexdigest()


def plain(value):
    """``value`` as JSON can carry it: a non-finite float as ``{"float": "-inf"}``."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": str(value)}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def dumps(value, **kwargs):
    """JSON text of ``value`` that any JSON reader accepts (no ``NaN``/``Infinity``)."""
    return json.dumps(plain(value), allow_nan=False, **kwargs)
