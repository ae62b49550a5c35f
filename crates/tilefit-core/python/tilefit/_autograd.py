"""Backward passes under emulation: autograd's graph run by a Python engine.

torch's C++ autograd engine routes each node to a ready queue per device and asks the driver about
it (``hasPrimaryContext``, device guards, streams); on a machine with no GPU it raises before the
first backward node runs. Under emulation nothing runs on a device, so the graph is walked here
instead, the way the engine walks it: dependencies counted from the roots, gradients summed per
node input, nodes run when all their inputs have arrived (highest sequence number first, as the
engine orders them), leaves accumulated by their own ``AccumulateGrad`` nodes. Every node is
torch's own (a C++ derivative or a custom ``autograd.Function``'s ``backward``), so the kernels a
backward launches are the ones it launches on a device.

:func:`install` replaces ``Variable._execution_engine`` (what ``Tensor.backward``,
``torch.autograd.backward`` and ``torch.autograd.grad`` all call) with :class:`Engine`, which
hands a graph with no GPU tensor to the real engine.
"""

from __future__ import annotations

import heapq


def _node_call(node, grads):
    """Run one node on its input gradients; its output gradients as a tuple."""
    if hasattr(node, "_forward_cls"):
        # A custom autograd.Function: its backward (the C++ PyNode would call the same).
        out = node.apply(*grads)
    else:
        out = node(*grads)
    if out is None or not isinstance(out, (tuple, list)):
        out = (out,)
    return tuple(out)


def _materialize(node, grads):
    """Missing input gradients as zeros of the node's input metadata (what the engine's
    ``InputBuffer`` and ``materialize_grads`` hand a node)."""
    import torch

    metadata = getattr(node, "_input_metadata", None)
    filled = []
    for i, grad in enumerate(grads):
        if grad is None and metadata is not None and i < len(metadata):
            meta = metadata[i]
            try:
                grad = torch.zeros(
                    tuple(meta.shape), dtype=meta.dtype, device=meta.device
                )
            except (AttributeError, RuntimeError, TypeError):
                grad = None
        filled.append(grad)
    return filled


def _validated(node, input_nr, grad):
    """A gradient as the engine's ``validate_outputs`` hands it on: summed down to the shape of
    the input it is for (a broadcast in the forward), in that input's dtype."""
    metadata = getattr(node, "_input_metadata", None)
    if metadata is None or input_nr >= len(metadata):
        return grad
    meta = metadata[input_nr]
    try:
        shape = tuple(meta.shape)
        if tuple(grad.shape) != shape:
            grad = grad.sum_to_size(shape)
        if grad.dtype != meta.dtype:
            grad = grad.to(meta.dtype)
    except (AttributeError, RuntimeError, TypeError):
        return grad
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


def run_backward(
    roots, grad_roots, inputs=(), accumulate_grad=True, create_graph=False
):
    """See :func:`_run`; the nodes run with grad mode on only for ``create_graph`` (as the
    engine runs them)."""
    import torch

    with torch.set_grad_enabled(create_graph):
        return _run(roots, grad_roots, inputs, accumulate_grad)


def _run(roots, grad_roots, inputs, accumulate_grad):
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
    buffers = {}

    def deliver(node, input_nr, grad):
        buffer = buffers.setdefault(id(node), [None] * _inputs_of(node))
        while len(buffer) <= input_nr:
            buffer.append(None)
        if grad is None:
            return
        grad = _validated(node, input_nr, grad)
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
        if id(node) in target_nodes:
            for n, nr in targets:
                if n is node and nr < len(grads):
                    captured[(id(node), nr)] = grads[nr]
        outputs = ()
        run = needed is None or id(node) in needed
        if type(node).__name__ == "AccumulateGrad":
            # grad() never accumulates; backward(inputs=...) only into the inputs given.
            if not accumulate_grad or (targets and id(node) not in target_nodes):
                run = False
            if run and grads and grads[0] is not None:
                node(grads[0])
        else:
            if id(node) in target_nodes and not accumulate_grad:
                # A non-leaf input of grad(): its gradient is taken here; the graph beyond it
                # runs only where another input lies.
                run = run and _passes_on(node, needed)
            if run:
                outputs = _node_call(node, _materialize(node, grads))
        for (child, input_nr), grad in zip(node.next_functions, outputs):
            if child is not None:
                deliver(child, input_nr, grad)
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
        if not any(getattr(t, "is_cuda", False) or _on_gpu(t) for t in tensors):
            return self._real.run_backward(
                tensors,
                grad_tensors,
                keep_graph,
                create_graph,
                inputs,
                allow_unreachable,
                accumulate_grad,
            )
        return run_backward(
            list(tensors),
            list(grad_tensors),
            tuple(inputs or ()),
            accumulate_grad,
            create_graph,
        )


def _on_gpu(tensor):
    device = getattr(tensor, "device", None)
    return device is not None and device.type in ("cuda", "hip")


def install():
    """Run backward passes of GPU tensors in the Python engine."""
    from torch.autograd import graph, variable

    if isinstance(variable.Variable._execution_engine, Engine):
        return
    engine = Engine(variable.Variable._execution_engine)
    variable.Variable._execution_engine = engine
    if hasattr(graph, "Variable"):
        graph.Variable._execution_engine = engine
