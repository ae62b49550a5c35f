"""A launched kernel as a self-contained Python file: its own source and the values its names had
at the launch, so a compile outside the script sees exactly what the script's kernel saw.

Triton compiles a ``@triton.jit`` function from its source (``JITFunction.src``) and looks every
other name up in the function's own scope: its ``__globals__`` and its closure
(``get_capture_scope``). That scope is what this module writes out, whatever bound it: a module in
``sys.modules`` or not, ``__main__``, an ``exec``'d namespace, a factory's closure, a conditional
import (``try: from triton.language.extra.libdevice import rsqrt``), an assignment at run time.

Each name the kernel's body reads becomes, in the written file:

- a plain value or a ``tl.constexpr``, ``tl`` dtype, tuple of these: the value itself, as the same
  type (Triton refuses a plain global that is not a constexpr, and so does the compile); an int
  of any size exactly (past 64 bits in hexadecimal, which Python's limit on int-to-text
  conversion leaves alone);
- an ``enum`` member (``IntEnum``, ``IntFlag``, ``StrEnum``...): the member of an enum rebuilt
  with the same name, kind and members; a numpy scalar (``numpy.float64``): the same numpy type
  and value, numpy imported only then (the script had it);
- a module of Triton or of the standard library: imported by its name, where it is the standard
  library's own file (a helper ``sched.py`` beside the script is an engine's module, below);
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
import __future__

import ast
import enum
import functools
import hashlib
import json
import math
import os
import sys
import sysconfig
import types

from tilefit import _jit

#: What the written file starts with: the one helper that defines a function from its source.
_PRELUDE = '''
import enum as _enum_module
import importlib as _importlib
import linecache as _linecache
import sys as _sys
import types as _types

import triton as _triton
import triton.language as _tl


def _define(kind, name, module, filename, line, source, scope, options, futures=0):
    """Define `name` from `source` in a namespace of its own (`scope`), registered with linecache
    so Triton's `inspect.getsource` reads it, and wrap it as the script's kernel was. `futures`
    are the `from __future__` flags its module was compiled with (deferred annotations stay
    text, as in the script)."""
    key = f"<tilefit-scope {filename}:{line}:{name}:{len(_linecache.cache)}>"
    text = "\\n" * (line - 1) + source
    _linecache.cache[key] = (len(text), None, text.splitlines(keepends=True), key)
    namespace = {"__name__": module, **scope}
    exec(compile(text, key, "exec", flags=futures, dont_inherit=True), namespace)
    fn = namespace[name]
    if kind == "constexpr_function":
        return _triton.constexpr_function(fn)
    return _triton.jit(fn, **options)


def _module(name, attributes):
    # A dict, not keywords: an attribute may be called `name`.
    module = _types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    return module


def _enum(kind, name, qualname, module, members, value):
    cls = getattr(_enum_module, kind)(name, members, module=module, qualname=qualname)
    return cls(value)


def _stand_in(name, qualname, module):
    return type(name, (), {"__qualname__": qualname, "__module__": module})


def _int_digits(digits):
    # The script converted this many digits to text (its Triton writes constexpr globals into
    # the cache key): raise, never lower, this process's limit to match.
    limit = _sys.get_int_max_str_digits()
    if limit and limit < digits:
        _sys.set_int_max_str_digits(digits)


def _float(text):
    return float(text)

'''


class NotCarried(Exception):
    """A value the kernel reads that a compile outside the script cannot be given."""


def _is_constexpr(value):
    import triton.language as tl

    return isinstance(value, tl.constexpr)


def _stdlib(module):
    """Whether ``module`` is the standard library's own: named as one of it and built in or
    loaded from its folder. A script's ``sched.py`` is imported as ``sched``, and a compile that
    imported ``sched`` by name would get the standard library's instead."""
    top = module.__name__.split(".")[0]
    if top not in getattr(sys, "stdlib_module_names", ()) or top == "__main__":
        return False
    path = getattr(module, "__file__", None)
    if path is None:
        return True
    path = os.path.realpath(path)
    folders = {
        os.path.realpath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib")
    }
    return any(path.startswith(folder + os.sep) for folder in folders)


#: The ``from __future__`` flag a kernel's code carries into the written file: with it, the
#: JIT reads its parameters' annotations as text (``"torch.Tensor"``), as in the script.
_FUTURES = __future__.annotations.compiler_flag

#: Past this many bits an int's decimal text may pass Python's default limit on int-to-text
#: conversion (4300 digits); such ints are written in hexadecimal, which has no limit.
_WIDE_BITS = 4000


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
    and whether only its signature's annotations read it (``utils.helper`` in the body gives
    ``{"utils": (frozenset({("helper",)}), False)}``). Triton's compile visits the annotations
    in the kernel's scope too, whatever ``from __future__ import annotations`` says, but only
    visits them. Parsed once per source: every launch of a kernel (every config an autotuner
    tries) asks again."""
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
    in_body = set()
    annotations = [
        a.annotation for a in ast.walk(function.args) if isinstance(a, ast.arg)
    ]
    signature = {
        id(n)
        for annotation in [*annotations, function.returns]
        if annotation is not None
        for n in ast.walk(annotation)
    }

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
        if isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in signature:
            in_body.add(chain_of(node)[0])
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
        name: (frozenset(parts), name not in in_body)
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
        #: The most decimal digits of an int the kernel reads, where past the default limit.
        self.digits = 0

    def value(self, value, where, chains=frozenset({()}), annotation=False):
        """A Python expression that rebuilds ``value`` (read as ``where``) in the written file.
        ``annotation``: only the kernel's signature annotations read it."""
        import triton.language as tl

        if value is None or type(value) in (bool, str):
            return repr(value)
        if type(value) is int:
            return self.integer(value, where)
        if type(value) is float:
            if math.isfinite(value):
                return repr(value)
            return f"_float({str(value)!r})"
        if isinstance(value, enum.Enum):
            return self.enum_member(value, where)
        if _is_numpy_scalar(value):
            return self.numpy_scalar(value, where)
        if isinstance(value, (bool, int, float, str)):
            raise NotCarried(
                f"`{where}` is a {_type_name(value)} ({_short(value)}), a subclass of "
                f"{type(value).__mro__[1].__name__} that tilefit cannot rebuild for a compile"
            )
        if _is_constexpr(value):
            return f"_tl.constexpr({self.value(value.value, where)})"
        if isinstance(value, tl.dtype):
            return f"_tl.dtype({value.name!r})"
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            items = ", ".join(self.value(v, where) for v in value)
            return f"({items}{',' if len(value) == 1 else ''})"
        if isinstance(value, types.ModuleType):
            return self.module(value, where, chains, annotation)
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
        if annotation and isinstance(value, type):
            # Triton's compile only visits an annotation (`x: torch.Tensor`), and its
            # signature reads a class annotation by its name: a class of that name does.
            return f"_stand_in({value.__name__!r}, {qualname!r}, {module_name!r})"
        raise NotCarried(
            f"`{where}` is a {_type_name(value)} "
            f"({_short(value)}): tilefit can carry only constexprs, plain values, Triton's "
            "builtins and modules, and @triton.jit functions to a compile"
        )

    def integer(self, value, where):
        """An int exactly: decimal where Python's default limit allows it, else hexadecimal (no
        limit), with the script's own limit carried where its Triton would write it as text."""
        if value.bit_length() <= _WIDE_BITS:
            return repr(value)
        try:
            digits = len(str(abs(value)))
        except ValueError:
            limit = sys.get_int_max_str_digits()
            raise NotCarried(
                f"`{where}` is an int of {value.bit_length()} bits, more decimal digits than "
                f"this process converts to text (sys.get_int_max_str_digits() is {limit}), "
                "and Triton writes a constexpr global's value into its cache key as text; "
                "raise the limit with sys.set_int_max_str_digits before the launch"
            ) from None
        self.digits = max(self.digits, digits)
        return hex(value)

    def enum_member(self, value, where):
        cls = type(value)
        kinds = ("IntFlag", "IntEnum", "StrEnum", "Flag", "Enum")
        kind = next(k for k in kinds if isinstance(value, getattr(enum, k, ())))
        members = ", ".join(
            f"({m.name!r}, {self.value(m.value, f'{where}.{m.name}')})" for m in cls
        )
        return (
            f"_enum({kind!r}, {cls.__name__!r}, {cls.__qualname__!r}, {cls.__module__!r}, "
            f"[{members}], {self.value(value.value, where)})"
        )

    def numpy_scalar(self, value, where):
        item = value.item()
        if type(item) not in (bool, int, float):
            raise NotCarried(
                f"`{where}` is a {_type_name(value)} ({_short(value)}), a numpy scalar with no "
                "exact Python value"
            )
        return (
            f"_importlib.import_module('numpy').dtype({value.dtype.str!r})"
            f".type({self.value(item, where)})"
        )

    def module(self, module, where, chains, annotation=False):
        name = module.__name__
        if (_triton_module(name) or _stdlib(module)) and sys.modules.get(
            name
        ) is module:
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
                f"{attr!r}: "
                + self.value(
                    getattr(module, attr),
                    f"{where}.{attr}",
                    frozenset(rest),
                    annotation,
                )
            )
        return f"_module({name!r}, {{{', '.join(items)}}})"

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
        futures = fn.__code__.co_flags & _FUTURES
        entries = []
        for name, (chains, annotation) in sorted(_referenced(src).items()):
            if name not in scope:
                continue
            entries.append(
                f"{name!r}: {self.value(scope[name], name, chains, annotation)}"
            )
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
            f"    {{{', '.join(entries)}}}, {options!r}, {futures})"
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
    try:
        text = repr(value)
    except ValueError:
        # An int past Python's limit on int-to-text conversion.
        return f"an int of {int(value).bit_length()} bits"
    return text if len(text) <= 60 else text[:57] + "..."


def _type_name(value):
    return f"{type(value).__module__}.{type(value).__qualname__}"


def _is_numpy_scalar(value):
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.generic)


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
    digits = f"_int_digits({writer.digits})\n" if writer.digits else ""
    text = header + _PRELUDE + digits + "\n".join(writer.lines) + f"\n{name} = {var}\n"
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
