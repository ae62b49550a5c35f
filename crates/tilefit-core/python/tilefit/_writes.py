"""Which of a kernel's arguments it writes: a taint walk of the ``@triton.jit`` function's source
from each parameter, through the names assigned from it, to the pointers of its ``tl.store`` calls,
atomics and descriptors' ``store`` calls. What a ``load`` returns is data, not a pointer, so a store
at ``X + y`` with ``y = tl.load(Y)`` writes ``X``, not ``Y``. Under emulation a launch runs no
kernel; the host knows the data of the tensors it only reads, and not of the ones it writes.
"""

import ast
import textwrap


def written_params(jit):
    """The names of the kernel's parameters it may write through (``tl.store``, ``tl.atomic_*``,
    a descriptor's or block pointer's ``store``): a taint walk of its source from each parameter
    through the names assigned from it. None where the source cannot be read (every tensor
    argument then counts as written)."""
    cached = jit.__dict__.get("_tilefit_written", False)
    if cached is not False:
        return cached
    try:
        written = _stores(textwrap.dedent(jit.src), {p.name for p in jit.params})
    except Exception:  # noqa: BLE001 (no source to read: every argument may be written)
        written = None
    jit.__dict__["_tilefit_written"] = written
    return written


def _stores(source, params):
    """The parameters among ``params`` whose pointers a kernel's ``source`` stores through."""
    tree = ast.parse(source)
    sources = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif (
            isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None
        ):
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.For, ast.withitem)):
            targets = [getattr(node, "target", None) or node.optional_vars]
            value = getattr(node, "iter", None) or node.context_expr
            if targets[0] is None:
                continue
        else:
            continue
        names = _pointer_names(value)
        for target in targets:
            for n in ast.walk(target):
                if isinstance(n, ast.Name):
                    sources.setdefault(n.id, set()).update(names)

    def roots(name, seen):
        if name in seen:
            return set()
        seen.add(name)
        found = {name} & params
        for source in sources.get(name, ()):
            found |= roots(source, seen)
        return found

    written = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name != "store" and not name.startswith("atomic_"):
            continue
        pointers = list(node.args[:1])
        if isinstance(func, ast.Attribute):
            # `desc.store(offsets, value)`: the receiver is what is written.
            pointers.append(func.value)
        for pointer in pointers:
            for name in _pointer_names(pointer):
                written |= roots(name, set())
    return frozenset(written)


def _pointer_names(expr):
    """The names an expression's pointer can come from: what a ``load`` (or an atomic, which
    returns the old value) returns is data, not a pointer, so the names inside one do not
    count."""
    found = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else getattr(func, "id", "")
            )
            if name == "load" or name.startswith("atomic_"):
                continue
        if isinstance(node, ast.Name):
            found.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return found


def forget_written(jit, args, kwargs, written_out):
    """Call ``written_out`` with each tensor argument the kernel may write (its data is no longer
    the host's to know); the ones it only reads keep theirs."""
    written = written_params(jit)
    names = [p.name for p in jit.params]
    for i, value in enumerate(args):
        if hasattr(value, "untyped_storage") and (
            written is None or i >= len(names) or names[i] in written
        ):
            written_out(value)
    for key, value in kwargs.items():
        if hasattr(value, "untyped_storage") and (written is None or key in written):
            written_out(value)
