"""graphed() on a region inside autograd (a loss whose result the caller's backward needs): a
forward and a backward graph, gradients to the arguments and to the parameters it reads through
`self`. The CPU tests run backend="eager" (the same argument handling and leaf discovery, no
graphs); the cuda-marked ones capture and replay."""

from __future__ import annotations

import weakref

import pytest
import torch

from graphsafe.runtime import graphed
from graphsafe.runtime.graphed import GraphedInputError
from graphsafe.runtime.graphed_autograd import AutogradRegionError, _sequence_marker, outside_leaves


class ScaledLoss(torch.nn.Module):
    """A loss with a parameter of its own, read through self (not an argument)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(2.0))

    def forward(self, a, b, output_dict=False):
        loss = ((a - b) ** 2).mean() * self.scale
        return {"loss": loss} if output_dict else loss


def _grads_of(loss_fn, model, owner, steps=3):
    """Run `steps` training steps of model -> loss_fn -> backward; the gradients of each step
    (of the model's and the loss `owner`'s parameters)."""
    seen = []
    for i in range(steps):
        x = torch.full((4, 3), float(i + 1))
        out = loss_fn(model(x), torch.zeros(4, 2), output_dict=True)["loss"]
        out.backward()
        seen.append([p.grad.clone() for p in (*model.parameters(), *owner.parameters())])
        for p in (*model.parameters(), *owner.parameters()):
            p.grad = None
    return seen


def test_a_loss_region_called_with_inputs_that_require_grad_gives_the_eager_gradients():
    torch.manual_seed(0)
    model, loss = torch.nn.Linear(3, 2), ScaledLoss()
    expected = _grads_of(loss, model, loss)
    step = graphed(loss.forward, backend="eager")
    got = _grads_of(step, model, loss)
    for want, have in zip(expected, got):
        assert all(torch.equal(w, h) for w, h in zip(want, have))
    assert step.stats["replays"] == 3 and step._autograd is not None


def test_a_parameter_read_through_self_is_found_as_a_leaf_of_the_region():
    model, loss = torch.nn.Linear(3, 2), ScaledLoss()
    step = graphed(loss.forward, backend="eager")
    step(model(torch.ones(4, 3)), torch.zeros(4, 2), output_dict=True)
    assert [id(t) for t in step._autograd._extras] == [id(loss.scale)]


def test_a_changed_python_argument_is_refused_as_baked():
    loss = ScaledLoss()
    a = torch.ones(4, 2, requires_grad=True)
    step = graphed(loss.forward, backend="eager")
    step(a, torch.zeros(4, 2), output_dict=True)
    with pytest.raises(GraphedInputError, match="GS301"):
        step(a, torch.zeros(4, 2), output_dict=False)


def test_another_input_shape_runs_eagerly_with_its_gradient():
    loss = ScaledLoss()
    step = graphed(loss.forward, backend="eager")
    step(torch.ones(4, 2, requires_grad=True), torch.zeros(4, 2))
    a = torch.ones(6, 2, requires_grad=True)
    step(a, torch.zeros(6, 2)).backward()
    assert step.stats["eager"] == 1 and a.grad is not None and a.grad.shape == (6, 2)


def test_outputs_whose_history_reaches_an_earlier_tensor_are_refused():
    kept = torch.ones(4, 2, requires_grad=True) * 3  # an intermediate computed before the call

    def region(a):
        return (a * kept).sum()

    step = graphed(region, backend="eager")
    with pytest.raises(GraphedInputError, match="computed before the call"):
        step(torch.ones(4, 2, requires_grad=True))


def test_a_region_returning_a_python_number_is_refused():
    def region(a):
        return a.sum(), 3

    step = graphed(region, backend="eager")
    with pytest.raises(GraphedInputError, match="tensors only"):
        step(torch.ones(2, requires_grad=True))


def test_a_graph_captured_without_autograd_refuses_a_later_call_a_backward_would_need():
    model = torch.nn.Linear(3, 2)
    step = graphed(model.forward, (torch.ones(4, 3),), backend="eager")  # inference on a trainable model
    assert step(torch.ones(4, 3)).shape == (4, 2)
    with pytest.raises(GraphedInputError, match="without autograd"):
        step(torch.ones(4, 3, requires_grad=True))


@pytest.mark.cuda
def test_a_loss_region_replays_its_backward_on_the_gpu_like_eager():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    torch.manual_seed(0)
    model, loss = torch.nn.Linear(3, 2).cuda(), ScaledLoss().cuda()

    def run(loss_fn):
        grads = []
        for i in range(4):
            x = torch.full((4, 3), float(i + 1), device="cuda")
            out = loss_fn(model(x), torch.zeros(4, 2, device="cuda"), output_dict=True)["loss"]
            out.backward()
            grads.append([p.grad.clone() for p in (*model.parameters(), *loss.parameters())])
            for p in (*model.parameters(), *loss.parameters()):
                p.grad = None
        return grads

    expected = run(loss)
    step = graphed(loss.forward)
    got = run(step)
    for want, have in zip(expected, got):
        for w, h in zip(want, have):
            torch.testing.assert_close(h, w)
    assert step.stats["replays"] == 4


@pytest.mark.cuda
def test_a_parameter_the_caller_used_before_the_call_gets_its_eager_gradient_from_the_graphs():
    # the caller multiplies by loss.scale before the region and keeps that graph alive: the parameter's
    # AccumulateGrad is made on the default stream, and a backward captured through it made the legacy
    # stream wait on the capture (cudaErrorStreamCaptureImplicit, gpytorch_svgp's raw_outputscale)
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    torch.manual_seed(0)
    model, loss = torch.nn.Linear(3, 2).cuda(), ScaledLoss().cuda()
    params = [*model.parameters(), *loss.parameters()]

    def run(loss_fn):
        grads = []
        for i in range(4):
            x = torch.full((4, 3), float(i + 1), device="cuda")
            pred = model(x) * loss.scale
            out = loss_fn(pred, torch.zeros(4, 2, device="cuda"), output_dict=True)["loss"]
            out.backward()
            grads.append([p.grad.clone() for p in params])
            for p in params:
                p.grad = None
        return grads

    expected = run(loss)
    step = graphed(loss.forward)
    got = run(step)
    assert [id(t) for t in step._autograd._extras] == [id(loss.scale)]
    for want, have in zip(expected, got):
        for w, h in zip(want, have):
            torch.testing.assert_close(h, w)
    assert step.stats["replays"] == 4


class ElboLike(torch.nn.Module):
    """gpytorch's ELBO shape: a likelihood term and a KL term, each from a parameter of its own read
    through self, combined with zero terms: `ll - kl + prior - added`."""

    def __init__(self) -> None:
        super().__init__()
        self.raw_noise = torch.nn.Parameter(torch.tensor([0.3]))
        self.variational = torch.nn.Parameter(torch.linspace(-1, 1, 5))

    def forward(self, f, y):
        log_likelihood = -((f - y) ** 2 * self.raw_noise.exp()).sum().div(f.shape[0])
        kl = (self.variational.exp() - self.variational).sum().div(100)
        return log_likelihood - kl + torch.zeros_like(log_likelihood) - torch.zeros_like(log_likelihood)


@pytest.mark.cuda
def test_an_elbo_shaped_loss_gives_every_parameter_its_eager_gradient_on_the_gpu():
    # on the GPU image (torch 2.11) the leaf walk stopped after the Add/Sub nodes: raw_noise got no gradient
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    torch.manual_seed(0)
    model, elbo = torch.nn.Linear(3, 1).cuda(), ElboLike().cuda()
    params = [*model.parameters(), *elbo.parameters()]

    def run(loss_fn):
        grads = []
        for i in range(4):
            x = torch.rand(8, 3, device="cuda", generator=torch.Generator("cuda").manual_seed(i))
            (-loss_fn(model(x).squeeze(1), x.sum(1))).backward()
            grads.append([p.grad.clone() for p in params])
            for p in params:
                p.grad = None
        return grads

    expected = run(elbo)
    step = graphed(elbo.forward)
    got = run(step)
    assert sorted(id(t) for t in step._autograd._extras) == sorted([id(elbo.raw_noise), id(elbo.variational)])
    for want, have in zip(expected, got):
        for w, h in zip(want, have):
            torch.testing.assert_close(h, w)
    assert step.stats["replays"] == 4


def test_the_callers_autograd_graph_survives_the_capture_of_the_region():
    # the first call captures (probe, warm-up, state restore): it must not write into the caller's
    # tensors, whose versions the caller's own backward checks (`logit_scale.exp()` saved its output)
    loss = ScaledLoss()
    raw = torch.tensor(0.5, requires_grad=True)
    a = torch.ones(4, 2, requires_grad=True)
    scale = raw.exp()
    step = graphed(lambda a, b, s: loss(a, b) * s, backend="eager")
    step(a, torch.zeros(4, 2), scale).backward()
    assert raw.grad is not None and a.grad is not None


def test_an_object_argument_holding_tensors_in_an_autograd_graph_gets_a_backward_graph():
    # gpytorch's marginal log likelihood takes a distribution object built from the model's
    # outputs: captured without autograd, the caller's backward found no history to follow; the
    # object's tensors are now inputs of a graph with its backward (object_arguments.py)
    class Normal:
        def __init__(self, mean):
            self.mean = mean

    weight = torch.ones(3, requires_grad=True)

    def loss(dist, target):
        return ((dist.mean - target) ** 2).sum()

    step = graphed(loss, backend="eager")
    step(Normal(weight * 2), torch.zeros(3)).backward()
    assert step._autograd is not None and weight.grad.tolist() == [8.0, 8.0, 8.0]
    with torch.no_grad():  # evaluation: no backward graph
        assert graphed(loss, backend="eager")(Normal(weight * 2), torch.zeros(3)).item() == 12.0


class _OldNode:
    """An autograd node's Python wrapper as torch up to 2.11 made it: the live one if some reference
    holds it, else a new object, freed with its last reference (torch 2.12+ keeps one per node), so
    a node visited and dropped leaves its id() to the next wrapper made."""

    live: "weakref.WeakValueDictionary[int, _OldNode]" = weakref.WeakValueDictionary()

    def __init__(self, node) -> None:
        self._node = node

    @classmethod
    def of(cls, node):
        if node is None:
            return None
        wrapper = cls.live.get(id(node))
        if wrapper is None:
            wrapper = cls.live[id(node)] = cls(node)
        return wrapper

    @property
    def next_functions(self):
        return tuple((_OldNode.of(node), index) for node, index in self._node.next_functions)

    @property
    def variable(self):
        return getattr(self._node, "variable", None)

    def _sequence_nr(self) -> int:
        return self._node._sequence_nr()


class _OldOutput:
    def __init__(self, tensor: torch.Tensor) -> None:
        self._tensor = tensor

    @property
    def grad_fn(self):
        return _OldNode.of(self._tensor.grad_fn)


def test_parameters_are_found_when_node_wrappers_are_freed_and_their_ids_reused():
    # gpytorch's ELBO shape: (log_likelihood - kl + prior - added), each term from its own parameter
    noise, variational = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    since = _sequence_marker()
    log_likelihood, kl = (noise * 2).sum().div(4), variational.exp().sum().div(5)
    loss = log_likelihood - kl + torch.zeros_like(kl) - torch.zeros_like(kl)
    found = outside_leaves([_OldOutput(loss)], [], since, "elbo")
    assert sorted(id(t) for t in found) == sorted([id(noise), id(variational)])


class _LeaflessNode:
    """A history that ends before any leaf: what the walk saw on the GPU image (only Add and Sub)."""

    variable = None
    next_functions = ((None, 0),)

    def _sequence_nr(self) -> int:
        return 2**62


def test_outputs_whose_history_reaches_no_input_nor_parameter_are_refused():
    output = type("Output", (), {"grad_fn": _LeaflessNode()})()
    with pytest.raises(AutogradRegionError, match="reaches no input and no parameter"):
        outside_leaves([output], [], 0, "elbo")


def test_outputs_that_do_not_require_grad_are_not_refused_by_the_leaf_walk():
    assert outside_leaves([torch.ones(2)], [torch.ones(2, requires_grad=True)], 0, "region") == []
