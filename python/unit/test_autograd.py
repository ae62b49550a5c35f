"""``tilefit._autograd``: backward passes of emulated GPU tensors run in the Python engine, with
what torch's own engine gives a training step: gradients of every leaf, tensor and node hooks,
``retain_grad``, a custom Function's ``set_materialize_grads``, non-reentrant checkpointing."""

import pytest


@pytest.fixture
def torch(emulated):
    emulated("h100")
    import torch

    return torch


def test_a_training_step_s_backward_gives_every_leaf_its_gradient(torch):
    from torch.autograd import variable

    from tilefit._autograd import Engine

    assert isinstance(variable.Variable._execution_engine, Engine)
    x = torch.randn(4, 8, device="cuda", requires_grad=True)
    w = torch.randn(8, 3, device="cuda", requires_grad=True)
    seen = []
    x.register_hook(lambda grad: seen.append(tuple(grad.shape)))
    hidden = x @ w
    hidden.retain_grad()
    hidden.relu().sum().backward()
    assert (x.grad.shape, w.grad.shape) == ((4, 8), (8, 3))
    assert type(w.grad).__name__ == "FakeTensor" and w.grad.device.type == "cuda"
    assert hidden.grad.shape == (4, 3)
    assert seen == [(4, 8)]
    # A second backward accumulates into the same leaves.
    (x @ w).sum().backward()
    assert w.grad.shape == (8, 3)


def test_a_custom_function_and_a_node_hook_run(torch):
    calls = []

    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.set_materialize_grads(False)
            return a * 2, a * 3

        @staticmethod
        def backward(ctx, grad_first, grad_second):
            calls.append(grad_second is None)
            return grad_first * 2

    a = torch.randn(5, device="cuda", requires_grad=True)
    first, _unused = Twice.apply(a)
    first.grad_fn.register_hook(lambda grads_in, grads_out: calls.append("hook"))
    first.sum().backward()
    # The output that was not used gets None, as set_materialize_grads(False) asks.
    assert calls == [True, "hook"]
    assert a.grad.shape == (5,)


def test_non_reentrant_checkpointing_recomputes_in_the_backward(torch):
    from torch.utils.checkpoint import checkpoint

    runs = []

    def block(x):
        runs.append(1)
        return (x @ x.T).tanh()

    x = torch.randn(6, 6, device="cuda", requires_grad=True)
    checkpoint(block, x, use_reentrant=False).sum().backward()
    assert len(runs) == 2
    assert x.grad.shape == (6, 6)


def test_the_engine_is_torch_s_again_once_restored():
    from torch.autograd import variable

    from tilefit import _autograd
    from tilefit._patches import REGISTRY

    assert REGISTRY.listing() == []
    _autograd.install()
    assert isinstance(variable.Variable._execution_engine, _autograd.Engine)
    assert REGISTRY.restore() == []
    assert not isinstance(variable.Variable._execution_engine, _autograd.Engine)
