"""Loading a kernel from its source file without running the file (part of tilefit's worker).

An engine's kernel module starts by importing its package (`import vllm.envs`, its logger, its
platform layer), none of which the kernel needs; a plain import of the file fails where the
package is not installed. Extraction reads the file with `ast` and runs only what the named
function reaches: the function (with its decorators: `@triton.jit`, `@triton.autotune`,
`@triton.heuristics`), every module-level function, class and assignment it names, transitively,
and the imports those need, in the order the file has them, in a fresh namespace that has
`triton` and `triton.language`. Code keeps its file name and line numbers, so Triton reads the
kernel's source from the real file, and errors point at the real lines. A name the kernel needs
that does not evaluate (its import fails, or its value does) is an error naming the name, its
line and why; the spec can give it in `[globals]`. A name the kernel never reaches is never run.
"""

import ast
import builtins
import hashlib
import importlib
import sys
import types


class ExtractError(Exception):
    """A name the kernel needs cannot be evaluated: `message` says which, where and why."""


def _bound_names(node):
    """The module-level names a top-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Import):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return [alias.asname or alias.name for alias in node.names if alias.name != "*"]
    targets = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    names = []
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                names.append(sub.id)
    return names


def _loads(node):
    return {
        sub.id
        for sub in ast.walk(node)
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)
    }


def _used_names(node):
    """The module-level names a statement reads. For a function: what its decorators, defaults and
    annotations read, and what its body reads that the function does not bind itself (a parameter
    or a local named like a module-level value, `a = torch.randn(...)` beside a kernel's own `a`,
    is not the module's)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return set()
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _loads(node)
    outer = set()
    for part in (
        node.decorator_list
        + node.args.defaults
        + [d for d in node.args.kw_defaults if d]
    ):
        outer |= _loads(part)
    arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    arguments += [a for a in (node.args.vararg, node.args.kwarg) if a]
    for arg in arguments:
        if arg.annotation is not None:
            outer |= _loads(arg.annotation)
    if node.returns is not None:
        outer |= _loads(node.returns)
    declared = {
        name
        for sub in ast.walk(node)
        if isinstance(sub, (ast.Global, ast.Nonlocal))
        for name in sub.names
    }
    local = {a.arg for a in arguments}
    for statement in node.body:
        for sub in ast.walk(statement):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                local.add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                local.add(sub.name)
    body = set()
    for statement in node.body:
        body |= _loads(statement)
    return outer | (body - (local - declared))


def _import_failure(node, error):
    module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
    if isinstance(node, ast.ImportFrom) and node.level:
        module = "." * node.level + (node.module or "")
    missing = getattr(error, "name", None) or module
    return (
        f"needs `{missing}`, which is not installed"
        if isinstance(error, ImportError)
        else (f"needs `{module}`, whose import fails: {type(error).__name__}: {error}")
    )


def extract(path, function, given=None):
    """The namespace of `function` extracted from `path`, the names it ran (in file order), and a
    digest of exactly the source it ran. `given` maps names to values the spec supplies instead
    of the file's."""
    given = dict(given or {})
    with open(path, encoding="utf-8") as file:
        source = file.read()
    tree = ast.parse(source, filename=path)
    future = 0
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for alias in node.names:
                feature = getattr(__import__("__future__"), alias.name, None)
                future |= getattr(feature, "compiler_flag", 0)
    lines = source.splitlines(keepends=True)
    statements = [node for node in tree.body]
    defines = {}
    for index, node in enumerate(statements):
        for name in _bound_names(node):
            defines.setdefault(name, []).append(index)
    if function not in defines:
        raise ExtractError(f"{path} has no module-level `{function}`")
    wanted, seen, queue = set(), set(), [function]
    while queue:
        name = queue.pop()
        if name in seen or name in given:
            continue
        seen.add(name)
        for index in defines.get(name, ()):
            if index in wanted:
                continue
            wanted.add(index)
            queue.extend(_used_names(statements[index]))
    import triton
    import triton.language as tl

    module = types.ModuleType(
        f"tilefit_extracted_{hashlib.sha256(path.encode()).hexdigest()[:16]}"
    )
    module.__file__ = path
    namespace = module.__dict__
    defaults = {"triton": triton, "tl": tl}
    namespace.update({"__builtins__": builtins, **defaults})
    namespace.update(given)
    sys.modules[module.__name__] = module
    failed = {}
    ran = []
    peeled = []
    replaced = {}
    digest = hashlib.sha256()
    digest.update(repr(sorted((k, repr(v)) for k, v in given.items())).encode())
    for index in sorted(wanted):
        node = statements[index]
        names = [n for n in _bound_names(node) if n not in given]
        if not names:
            continue
        missing = sorted(n for n in _used_names(node) if n in failed and n not in given)
        if missing and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for name in names:
                failed[name] = (node.lineno, failed[missing[0]][1])
            continue
        code = compile(
            ast.Module(body=[node], type_ignores=[]),
            path,
            "exec",
            flags=future,
            dont_inherit=True,
        )
        first = min(
            [node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]
        )
        digest.update("".join(lines[first - 1 : node.end_lineno]).encode())
        try:
            exec(code, namespace)
        except Exception as error:
            stripped = _peel(node, namespace, path, future)
            if stripped is not None:
                replaced[index], taken_off = stripped
                peeled.extend(taken_off)
                ran.extend(names)
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                reason = _import_failure(node, error)
            else:
                reason = f"does not evaluate: {type(error).__name__}: {error}"
            for name in names:
                if name in defaults:
                    # `from vllm.triton_utils import tl, triton`: Triton itself is here.
                    namespace[name] = defaults[name]
                else:
                    failed[name] = (node.lineno, reason)
            continue
        ran.extend(names)
    needed = _needed_failures(
        [replaced.get(i, node) for i, node in enumerate(statements)],
        defines,
        wanted,
        failed,
        function,
        given,
    )
    if needed:
        name, (line, reason) = needed[0]
        file_name = path.rsplit("/", 1)[-1]
        more = (
            f" (and {len(needed) - 1} more: "
            + ", ".join(f"`{n}`" for n, _ in needed[1:])
            + ")"
            if len(needed) > 1
            else ""
        )
        raise ExtractError(
            f"`{name}` ({file_name}:{line}) {reason}: give it in [globals] or install the "
            f"package{more}"
        )
    return namespace, ran, digest.hexdigest(), peeled


def _is_jit(decorator):
    """`@triton.jit`, `@jit`, `@triton.jit(...)`."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute):
        return target.attr == "jit"
    return isinstance(target, ast.Name) and target.id == "jit"


def _peel(node, namespace, path, future):
    """A kernel under wrappers that do not evaluate here (FlagGems' `@libentry()` and
    `@libtuner(configs=runtime.get_tuned_config(...))`, an engine's own `Autotuner` subclass):
    define it with the outermost decorators taken off, one at a time, down to its `@triton.jit`.
    Returns the statement as defined and the decorators taken off, or None when that does not
    define it."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    decorators = list(node.decorator_list)
    jit = [i for i, d in enumerate(decorators) if _is_jit(d)]
    if not jit:
        return None
    for cut in range(1, jit[-1] + 1):
        trimmed = ast.copy_location(
            type(node)(
                **{
                    **{f: getattr(node, f) for f in node._fields},
                    "decorator_list": decorators[cut:],
                }
            ),
            node,
        )
        try:
            code = compile(
                ast.Module(body=[trimmed], type_ignores=[]),
                path,
                "exec",
                flags=future,
                dont_inherit=True,
            )
            exec(code, namespace)
        except Exception:
            continue
        return trimmed, ["@" + ast.unparse(d) for d in decorators[:cut]]
    return None


def _needed_failures(statements, defines, wanted, failed, function, given):
    """The failed names the kernel really reads: reached from the function through names that are
    not themselves failed imports of a whole package (reading `vllm.envs.X` needs `vllm`)."""
    order = []
    seen, queue = set(), [function]
    while queue:
        name = queue.pop(0)
        if name in seen or name in given:
            continue
        seen.add(name)
        if name in failed:
            order.append((name, failed[name]))
            continue
        for index in defines.get(name, ()):
            if index in wanted:
                queue.extend(sorted(_used_names(statements[index])))
    return order


def import_module(module_name):
    """The module, imported the plain way; `None` with the reason when that fails."""
    try:
        return importlib.import_module(module_name), None
    except Exception as error:  # the caller falls back to extraction from the file
        return None, f"{type(error).__name__}: {error}"
