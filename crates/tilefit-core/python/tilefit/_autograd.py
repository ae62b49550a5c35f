"""Backward passes under emulation: autograd's graph run by a Python engine.

torch's C++ autograd engine routes each node to a ready queue per device and asks the driver about
it (``hasPrimaryContext``, device guards, streams); on a machine with no GPU it raises before the
first backward node runs. Under emulation nothing runs on a device, so the graph is walked here
instead, the way the engine walks it: dependencies counted from the roots, gradients summed per
node input, nodes run when all their inputs have arrived (highest sequence number first, as the
engine orders them), leaves accumulated by their own ``AccumulateGrad`` nodes. Every node is
torch's own (a C++ derivative or a custom ``autograd.Function``'s ``backward``), so the kernels a
backward launches are the ones it launches on a device.

The engine's hooks run where it runs them (``call_function``): a tensor's hooks
(``Tensor.register_hook``, ``register_multi_grad_hook``) and ``retain_grad`` on the gradient
reaching it, then the node's pre-hooks, the node, and its post-hooks. The C++ engine reads them
from the node, which Python cannot; :mod:`tilefit._hooks` keeps them, as they are registered, in the
node's ``metadata``: tensors' hooks and ``retain_grad`` for every node, and ``register_hook`` /
``register_prehook`` for a custom Function's node (module full backward hooks use those). A hook
registered on one of torch's C++ nodes (``y.grad_fn.register_hook``) cannot be seen there: its
type cannot be patched and its hooks cannot be read.

:func:`install` replaces ``Variable._execution_engine`` (what ``Tensor.backward``,
``torch.autograd.backward`` and ``torch.autograd.grad`` all call) with :class:`Engine`, which
hands a graph with no GPU tensor to the real engine.
"""

from __future__ import annotations

import heapq

from tilefit import _hooks, _state
from tilefit._patches import REGISTRY


def _node_call(node, grads):
    """Run one node on its input gradients; its output gradients as a tuple, one per edge."""
    if hasattr(node, "_forward_cls"):
        # A custom autograd.Function: its backward (the C++ PyNode would call the same).
        out = node.apply(*grads)
    else:
        out = node(*grads)
    if out is None or not isinstance(out, (tuple, list)):
        out = (out,)
    if hasattr(node, "_forward_cls"):
        return _per_edge(node, tuple(out))
    return tuple(out)


def _per_edge(node, out):
    """A custom Function's backward returns a gradient per forward input, where its node has
    an edge per tensor input only (``PyNode`` drops the others by ``is_variable_input``, which
    Python cannot read). The k-th input that needs a gradient is the k-th edge that leads
    somewhere; an edge that leads nowhere (a tensor that needs none) gets nothing."""
    edges = node.next_functions
    needs = tuple(getattr(node, "needs_input_grad", ()) or ())
    if len(out) < len(needs) or any(g is not None for g in out[len(needs) :]):
        # PyNode's check: extra results are allowed only as None.
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients "
            f"(expected {len(needs)}, got {len(out)})"
        )
    if len(needs) == len(edges):
        return out[: len(edges)]
    wanted = [i for i, need in enumerate(needs) if need]
    live = [i for i, (child, _) in enumerate(edges) if child is not None]
    mapped = [None] * len(edges)
    for edge, position in zip(live, wanted):
        mapped[edge] = out[position] if position < len(out) else None
    return tuple(mapped)


def _materialize(node, grads):
    """The input gradients as the engine hands them to ``node``: a missing one stays undefined
    (None) for torch's C++ nodes, whose derivatives handle it; a custom ``autograd.Function``
    gets zeros of the output's metadata in its place (``PyNode``'s ``materialize_grads``), unless
    its forward called ``ctx.set_materialize_grads(False)`` (flex attention's does: a zeros
    tensor there would enter the joint graph, and Inductor's kernels, as it does not on a
    device)."""
    import torch

    if not hasattr(node, "_forward_cls") or not getattr(node, _MATERIALIZE, True):
        return list(grads)
    metadata = getattr(node, "_input_metadata", None)
    on_gpu = any(_on_gpu(meta) for meta in metadata or ())
    filled = []
    for i, grad in enumerate(grads):
        if grad is None and metadata is not None and i < len(metadata):
            meta = metadata[i]
            if on_gpu and _placeholder(meta):
                # An output that is not a tensor (PyNode hands None) or is marked
                # non-differentiable (PyNode's output_info, which Python cannot read, has its
                # shape): its metadata is a default one.
                filled.append(None)
                continue
            try:
                grad = torch.zeros(
                    tuple(meta.shape), dtype=meta.dtype, device=meta.device
                )
            except (AttributeError, RuntimeError, TypeError):
                grad = None
        filled.append(grad)
    return filled


def _placeholder(meta):
    """A default-constructed input metadata: a CPU float32 scalar."""
    import torch

    try:
        return (
            meta.device.type == "cpu"
            and tuple(meta.shape) == ()
            and meta.dtype == torch.float32
        )
    except AttributeError:
        return False


# Where a custom Function's context keeps what ``set_materialize_grads`` was given: the C++
# field it sets cannot be read back from Python.
_MATERIALIZE = "_tilefit_materialize_grads"


def _validated(node, input_nr, grad, producer=None, index=0):
    """A gradient as the engine's ``validate_outputs`` hands it on: summed down to the shape of
    the input it is for (a broadcast in the forward), in that input's dtype; one that cannot be
    raises the engine's error, naming the node that ``producer`` is."""
    metadata = getattr(node, "_input_metadata", None)
    if metadata is None or input_nr >= len(metadata):
        return grad
    meta = metadata[input_nr]
    try:
        shape = tuple(meta.shape)
        dtype = meta.dtype
        got = tuple(grad.shape)
    except (AttributeError, RuntimeError, TypeError):
        return grad
    if got != shape:
        try:
            grad = grad.sum_to_size(shape)
        except RuntimeError:
            name = producer.name() if producer is not None else type(node).__name__
            raise RuntimeError(
                f"Function {name} returned an invalid gradient at index {index} - got "
                f"{list(got)} but expected shape compatible with {list(shape)}"
            ) from None
    if grad.dtype != dtype:
        grad = grad.to(dtype)
    return grad


def _edge(tensor_or_edge):
    import torch

    edge = tensor_or_edge
    if not (hasattr(edge, "node") and hasattr(edge, "output_nr")):
        edge = torch.autograd.graph.get_gradient_edge(tensor_or_edge)
    return edge.node, edge.output_nr


def _inputs_of(node):
    metadata = getattr(node, "_input_metadata", None)
    return len(metadata) if metadata is not None else 1


#: Where a node's ``metadata`` keeps that a backward without ``retain_graph`` freed its saved
#: tensors.
_RELEASED = "_tilefit_released"

# The non-leaf tensors that ``retain_grad`` was called on are the run's (``_state.RUN.retained``).
# The engine keeps the gradient of the node that is the tensor's ``grad_fn`` when that node runs
# (after an in-place op, the new one).

#: Per C++ node type, the attributes that hold its saved tensors.
_SAVED_NAMES = {}

_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


def _holds_saved(node):
    """Whether a node holds saved tensors (what a backward without ``retain_graph`` frees)."""
    if hasattr(node, "_forward_cls"):
        try:
            return bool(node._raw_saved_tensors)
        except RuntimeError:
            return False
    names = _SAVED_NAMES.get(type(node))
    if names is None:
        names = [n for n in dir(node) if n.startswith("_raw_saved_")]
        _SAVED_NAMES[type(node)] = names
    for name in names:
        try:
            value = getattr(node, name)
        except RuntimeError:
            continue
        if value is not None and (not isinstance(value, (list, tuple)) or value):
            return True
    return False


class _Task:
    """One backward run: what the engine's graph task answers while it runs (its id, the nodes
    it will execute) and the callbacks queued for its end (``queue_callback``)."""

    #: Ids apart from the real engine's (which count from 0 in a process).
    _next = 1 << 40

    def __init__(self, keep_graph=True):
        _Task._next += 1
        self.id = _Task._next
        self.keep_graph = keep_graph
        self.callbacks = []
        self.reachable = set()
        self.needed = None

    def will_execute(self, node):
        node = getattr(node, "node", node)  # a GradientEdge names its node
        return id(node) in (self.needed if self.needed is not None else self.reachable)


# The backward runs in progress, innermost last, are the run's (``_state.RUN.tasks``).


def run_backward(
    roots,
    grad_roots,
    inputs=(),
    accumulate_grad=True,
    create_graph=False,
    keep_graph=True,
):
    """See :func:`_run`; the nodes run with grad mode on only for ``create_graph`` (as the
    engine runs them), and the callbacks queued during the run run at its end, in order (those
    they queue too), as the engine's ``exec_post_processing`` runs them."""
    import torch

    task = _Task(keep_graph)
    _state.RUN.tasks.append(task)
    try:
        with torch.set_grad_enabled(create_graph):
            result = _run(roots, grad_roots, inputs, accumulate_grad, task)
        done = 0
        while done < len(task.callbacks):
            task.callbacks[done]()
            done += 1
        return result
    finally:
        _state.RUN.tasks.remove(task)


def _run(roots, grad_roots, inputs, accumulate_grad, task=None):
    """Walk the graph from ``roots`` (tensors) seeded with ``grad_roots``. With ``inputs`` and no
    accumulation (``torch.autograd.grad``), return the gradient reaching each input; with
    accumulation, accumulate into the leaves (only ``inputs``' leaves, when given)."""
    targets = [_edge(i) for i in inputs] if inputs else []
    target_nodes = {id(n): n for n, _ in targets}
    captured = {}
    # Dependencies: how many edges lead into each node from the roots' part of the graph.
    deps = {}
    nodes = {}
    # Each root's gradient edge, as the engine takes it: its grad_fn's output, or a leaf's
    # AccumulateGrad node (so that `grad(x, x)` hands the seed straight back, as an identity
    # does in a joint graph); None for a root that takes no gradient.
    root_edges = [
        _edge(r) if (r.grad_fn is not None or r.requires_grad) else None for r in roots
    ]
    stack = [edge[0] for edge in root_edges if edge is not None]
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        nodes[id(node)] = node
        for child, _ in node.next_functions:
            if child is None:
                continue
            deps[id(child)] = deps.get(id(child), 0) + 1
            stack.append(child)
    # With inputs, only nodes from which a target is reachable run (the engine's exec_info).
    needed = None
    if targets:
        needed = set()
        memo = {}

        def reaches(node):
            key = id(node)
            if key in memo:
                return memo[key]
            memo[key] = False
            hit = key in target_nodes
            for child, _ in node.next_functions:
                if child is not None and reaches(child):
                    hit = True
            memo[key] = hit
            return hit

        for node in list(nodes.values()):
            if reaches(node):
                needed.add(id(node))
    if task is not None:
        task.reachable, task.needed = set(nodes), needed
    buffers = {}

    def deliver(node, input_nr, grad, producer=None, index=0):
        buffer = buffers.setdefault(id(node), [None] * _inputs_of(node))
        while len(buffer) <= input_nr:
            buffer.append(None)
        if grad is None:
            return
        grad = _validated(node, input_nr, grad, producer, index)
        buffer[input_nr] = grad if buffer[input_nr] is None else buffer[input_nr] + grad

    ready = []
    for edge, grad in zip(root_edges, grad_roots):
        if edge is not None:
            deliver(edge[0], edge[1], grad)
    for edge in root_edges:
        node = edge[0] if edge is not None else None
        if node is not None and deps.get(id(node), 0) == 0 and id(node) in nodes:
            entry = (-node._sequence_nr(), id(node), node)
            if entry not in ready:
                heapq.heappush(ready, entry)
            nodes.pop(id(node))
    while ready:
        _, _, node = heapq.heappop(ready)
        grads = buffers.pop(id(node), [None] * _inputs_of(node))
        outputs = ()
        run = needed is None or id(node) in needed
        accumulate = type(node).__name__ == "AccumulateGrad"
        if accumulate:
            # grad() never accumulates; backward(inputs=...) only into the inputs given.
            if not accumulate_grad or (targets and id(node) not in target_nodes):
                run = False
        elif id(node) in target_nodes and not accumulate_grad:
            # A non-leaf input of grad(): its gradient is taken here; the graph beyond it runs
            # only where another input lies.
            run = run and _passes_on(node, needed)
        if id(node) in target_nodes and not accumulate_grad:
            # grad() takes an input's gradient after its tensor hooks where the node goes no
            # further, and before them (they run with the node) where it does.
            taken = grads if run else _hooks.tensor_pre_hooks(node, grads)
            for n, nr in targets:
                if n is node and nr < len(taken):
                    captured[(id(node), nr)] = taken[nr]
        if run:
            grads = _hooks.pre_hooks(node, _hooks.tensor_pre_hooks(node, grads))
            if accumulate:
                if grads and grads[0] is not None:
                    node(grads[0])
            else:
                metadata = _hooks.node_metadata(node)
                if metadata.get(_RELEASED):
                    raise RuntimeError(_FREED)
                outputs = _node_call(node, _materialize(node, grads))
                outputs = _hooks.post_hooks(node, outputs, grads)
                if task is not None and not task.keep_graph and _holds_saved(node):
                    metadata[_RELEASED] = True
        for index, ((child, input_nr), grad) in enumerate(
            zip(node.next_functions, outputs)
        ):
            if child is not None:
                deliver(child, input_nr, grad, node, index)
        for child, _ in node.next_functions:
            if child is None:
                continue
            deps[id(child)] -= 1
            if deps[id(child)] == 0:
                heapq.heappush(ready, (-child._sequence_nr(), id(child), child))
    if not targets or accumulate_grad:
        return ()
    result = []
    for n, nr in targets:
        grad = captured.get((id(n), nr))
        result.append(grad)
    return tuple(result)


def _passes_on(node, needed):
    """Whether a target node must also run because another target lies beyond it."""
    if needed is None:
        return True
    for child, _ in node.next_functions:
        if child is not None and id(child) in needed:
            return True
    return False


class Engine:
    """``Variable._execution_engine`` under emulation: a graph holding a GPU tensor runs in
    :func:`run_backward`; anything else, and every other method, is the real engine's."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def is_checkpoint_valid(self):
        """Reentrant checkpointing works only in a backward that runs the whole graph (the
        engine's graph task has no ``inputs``), as in the real engine."""
        if _state.RUN.tasks:
            return all(task.needed is None for task in _state.RUN.tasks)
        return self._real.is_checkpoint_valid()

    def queue_callback(self, callback):
        """A callback for the end of the backward run in progress (the real engine's, where
        none of this engine's is)."""
        if _state.RUN.tasks:
            _state.RUN.tasks[-1].callbacks.append(callback)
        else:
            self._real.queue_callback(callback)

    def run_backward(
        self,
        tensors,
        grad_tensors,
        keep_graph=False,
        create_graph=False,
        inputs=(),
        allow_unreachable=False,
        accumulate_grad=True,
    ):
        if not _graph_on_gpu(tensors):
            return self._real.run_backward(
                tensors,
                grad_tensors,
                keep_graph,
                create_graph,
                inputs,
                allow_unreachable,
                accumulate_grad,
            )
        # python_engine.cpp's checks, in its order: what fails on the device fails here.
        for i, tensor in enumerate(tensors):
            if not tensor.requires_grad:
                raise RuntimeError(
                    f"element {i} of tensors does not require grad and does not have a grad_fn"
                )
        for tensor in inputs or ():
            if hasattr(tensor, "requires_grad"):
                if accumulate_grad:
                    tensor.retain_grad()
                if not tensor.requires_grad:
                    raise RuntimeError(
                        "One of the differentiated Tensors does not require grad"
                    )
        result = run_backward(
            list(tensors),
            list(grad_tensors),
            tuple(inputs or ()),
            accumulate_grad,
            create_graph,
            keep_graph,
        )
        if not accumulate_grad and not allow_unreachable:
            unused = [i for i, r in enumerate(result) if r is None]
            if unused:
                raise RuntimeError(self._unused_message(unused[0]))
        return result

    def _unused_message(self, index):
        """The real engine's words for an input the graph never reached (they changed between
        torch releases): asked of it once, on a CPU graph whose input 1 is unused."""
        import torch

        if not hasattr(self, "_unused"):
            a, b = (torch.zeros((), requires_grad=True) for _ in range(2))
            try:
                self._real.run_backward(
                    (a * 1,), (torch.ones(()),), False, False, (a, b), False, False
                )
                self._unused = None
            except RuntimeError as error:
                self._unused = str(error)
        message = self._unused or (
            "One of the differentiated Tensors appears to not have been used in the graph. "
            "Set allow_unused=True if this is the desired behavior."
        )
        return message.replace("at index 1 ", f"at index {index} ")


def _on_gpu(tensor):
    device = getattr(tensor, "device", None)
    return device is not None and device.type in ("cuda", "hip")


def _graph_on_gpu(roots):
    """Whether a backward from ``roots`` touches a GPU tensor: a root on one, or any node of its
    graph whose inputs are (a CPU loss taken from CUDA tensors is still a CUDA graph)."""
    if any(getattr(t, "is_cuda", False) or _on_gpu(t) for t in roots):
        return True
    stack = [getattr(t, "grad_fn", None) for t in roots]
    seen = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None and _on_gpu(variable):
            return True
        for meta in getattr(node, "_input_metadata", None) or ():
            if _on_gpu(meta):
                return True
        stack.extend(child for child, _ in node.next_functions)
    return False


def install():
    """Run backward passes of GPU tensors in the Python engine, and keep each custom Function's
    ``set_materialize_grads`` where :func:`_materialize` can read it."""
    from torch.autograd import function, graph, variable

    if isinstance(variable.Variable._execution_engine, Engine):
        return
    engine = Engine(variable.Variable._execution_engine)
    why = "torch's C++ engine runs no backward of FakeTensors on an emulated GPU: the Python engine does"
    REGISTRY.replace(variable.Variable, "_execution_engine", engine, why)
    if hasattr(graph, "Variable") and graph.Variable is not variable.Variable:
        REGISTRY.replace(graph.Variable, "_execution_engine", engine, why)
    real_set = function.FunctionCtx.set_materialize_grads

    def set_materialize_grads(self, value):
        real_set(self, value)
        try:
            setattr(self, _MATERIALIZE, bool(value))
        except (AttributeError, TypeError):
            pass

    set_materialize_grads.__doc__ = real_set.__doc__
    REGISTRY.replace(
        function.FunctionCtx,
        "set_materialize_grads",
        set_materialize_grads,
        "the Python engine reads each custom Function's choice",
    )
    _hooks.keep()
    _answer_for_tasks()


def _answer_for_tasks():
    """What torch asks the engine about the backward in progress (the id that
    ``register_multi_grad_hook`` and non-reentrant checkpointing key their state by, and whether
    a node will run), answered for this engine's runs."""
    import torch

    real_id = torch._C._current_graph_task_id
    real_will = torch._C._will_engine_execute_node

    def current_graph_task_id():
        return _state.RUN.tasks[-1].id if _state.RUN.tasks else real_id()

    def will_engine_execute_node(node):
        return (
            _state.RUN.tasks[-1].will_execute(node)
            if _state.RUN.tasks
            else real_will(node)
        )

    why = "torch asks the engine about the backward in progress: the Python engine answers"
    REGISTRY.replace(torch._C, "_current_graph_task_id", current_graph_task_id, why)
    REGISTRY.replace(
        torch._C, "_will_engine_execute_node", will_engine_execute_node, why
    )
