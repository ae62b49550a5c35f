"""The autograd engine's hooks under emulation: kept as they are registered, run where torch's
engine runs them (``call_function``). The C++ engine reads a node's hooks from the node, which
Python cannot: :func:`keep` keeps them in the node's ``metadata`` as they are registered
(tensors' hooks and ``retain_grad`` for every node, ``register_hook`` / ``register_prehook`` for
a custom Function's node, which module full backward hooks use), and :mod:`tilefit._autograd`'s
engine calls :func:`tensor_pre_hooks`, :func:`pre_hooks` and :func:`post_hooks` around each node.
"""

from __future__ import annotations

from tilefit import _state
from tilefit._patches import REGISTRY

#: Where a node's ``metadata`` keeps what the engine would read from the node: tensors' hook
#: dicts by output number, and the hook dicts of a custom Function's ``register_prehook`` and
#: ``register_hook``.
_TENSOR_HOOKS = "_tilefit_tensor_hooks"
_PRE_HOOKS = "_tilefit_pre_hooks"
_POST_HOOKS = "_tilefit_post_hooks"


def node_metadata(node):
    """A node's ``metadata`` dict (a node that has none: an empty one)."""
    try:
        return node.metadata
    except (AttributeError, RuntimeError):
        return {}


def _run_tensor_hooks(hooks, grad):
    """A tensor's hooks on its gradient, in order; one returning a tensor replaces it."""
    for hook in list(hooks.values()):
        result = hook(grad)
        if result is not None:
            grad = result
    return grad


def _retain(tensor, grad):
    """``retain_grad``'s hook: the gradient kept in ``.grad`` (summed with one already there)."""
    import torch

    with torch.no_grad():
        if tensor.grad is None:
            tensor.grad = grad.clone(memory_format=torch.contiguous_format)
        else:
            tensor.grad = tensor.grad + grad


def tensor_pre_hooks(node, grads):
    """``call_tensor_pre_hooks``: a tensor's hooks, then ``retain_grad``, per input gradient."""
    grads = list(grads)
    if type(node).__name__ == "AccumulateGrad":
        hooks = getattr(getattr(node, "variable", None), "_backward_hooks", None)
        if hooks and grads and grads[0] is not None:
            grads[0] = _run_tensor_hooks(hooks, grads[0])
        return grads
    metadata = node_metadata(node)
    for nr, hooks in list(metadata.get(_TENSOR_HOOKS, {}).items()):
        if nr < len(grads) and grads[nr] is not None and hooks:
            grads[nr] = _run_tensor_hooks(hooks, grads[nr])
    for tensor in list(_state.RUN.retained):
        if tensor.grad_fn is node:
            nr = tensor.output_nr
            if nr < len(grads) and grads[nr] is not None:
                _retain(tensor, grads[nr])
    return grads


def pre_hooks(node, grads):
    """``call_pre_hooks``: the node's pre-hooks on its gradients, each able to replace them."""
    for hooks in node_metadata(node).get(_PRE_HOOKS, []):
        for hook in list(hooks.values()):
            result = hook(tuple(grads))
            if result is not None:
                grads = list(result)
    return grads


def post_hooks(node, outputs, grads):
    """``call_post_hooks``: the node's hooks on (its output gradients, its input gradients)."""
    for hooks in node_metadata(node).get(_POST_HOOKS, []):
        for hook in list(hooks.values()):
            result = hook(tuple(outputs), tuple(grads))
            if result is not None:
                outputs = tuple(result)
    return outputs


def keep():
    """Keep each hook the engine would run in its node's ``metadata``, as it is registered (the
    real registration runs too, for the real engine)."""
    import torch
    from torch.autograd.function import BackwardCFunction

    register_hook = torch.Tensor.register_hook
    retain_grad = torch.Tensor.retain_grad

    def register_hook_(self, hook):
        handle = register_hook(self, hook)
        node = self.grad_fn
        if node is not None and self._backward_hooks is not None:
            hooks = node_metadata(node).setdefault(_TENSOR_HOOKS, {})
            hooks[self.output_nr] = self._backward_hooks
        return handle

    def retain_grad_(self):
        retain_grad(self)
        if self.grad_fn is not None:
            _state.RUN.retained.add(self)

    register_hook_.__doc__ = register_hook.__doc__
    retain_grad_.__doc__ = retain_grad.__doc__
    why = "the Python engine runs the hooks registered on a tensor"
    REGISTRY.replace(torch.Tensor, "register_hook", register_hook_, why)
    REGISTRY.replace(torch.Tensor, "retain_grad", retain_grad_, why)

    def keeping(real, key):
        def register(self, hook):
            handle = real(self, hook)
            hooks = handle.hooks_dict_ref()
            kept = node_metadata(self).setdefault(key, [])
            if hooks is not None and not any(h is hooks for h in kept):
                kept.append(hooks)
            return handle

        register.__doc__ = real.__doc__
        return register

    why = "the Python engine runs the hooks registered on a node"
    REGISTRY.replace(
        BackwardCFunction,
        "register_hook",
        keeping(BackwardCFunction.register_hook, _POST_HOOKS),
        why,
    )
    REGISTRY.replace(
        BackwardCFunction,
        "register_prehook",
        keeping(BackwardCFunction.register_prehook, _PRE_HOOKS),
        why,
    )
