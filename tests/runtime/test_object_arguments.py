"""Object arguments holding tensors (a distribution with a lazy covariance) in a region graphed with
its backward: flattened to their tensors, rebuilt around the graph's static leaves, gradients back
to the caller's tensors. CPU tests run backend="eager" (the same flattening and rebuilding, no
graphs); the cuda-marked one captures and replays."""

from __future__ import annotations

from collections import OrderedDict, namedtuple

import pytest
import torch

from graphsafe.runtime import graphed
from graphsafe.runtime.graphed import GraphedInputError
from graphsafe.runtime.object_arguments import ObjectArgumentError, flatten_object


class Diagonal:
    """A lazy covariance: its factor, a memo dict filled on first use, and settings."""

    def __init__(self, diag):
        self._args = (diag,)
        self.diag = diag
        self._memo = {}
        self.options = OrderedDict(jitter=1e-6)

    def log_det(self):
        if "log_det" not in self._memo:
            self._memo["log_det"] = self.diag.log().sum()
        return self._memo["log_det"]


class Normal:
    def __init__(self, mean, covariance):
        self.loc = mean
        self.covariance = covariance
        self.event_shape = mean.shape

    @property
    def variance(self):
        if "variance" not in vars(self):  # a lazy property: computed once, kept on the object
            self.__dict__["variance"] = self.covariance.diag * 1.0
        return self.__dict__["variance"]


def nll(dist, target):
    return (((target - dist.loc) ** 2) / dist.variance).sum() + dist.covariance.log_det()


def _model_outputs(weight, i):
    x = torch.full((5,), float(i + 1), device=weight.device)
    return Normal(x * weight, Diagonal((x * weight).exp()))


def test_an_object_is_flattened_to_its_tensors_each_once_and_rebuilt_around_others():
    mean, diag = torch.ones(3), torch.full((3,), 2.0)
    dist = Normal(mean, Diagonal(diag))
    tensors, skeleton = flatten_object(dist, "Normal")
    assert [id(t) for t in tensors] == [id(mean), id(diag)]  # `_args` and `diag` share one tensor
    new_mean, new_diag = torch.zeros(3), torch.ones(3)
    copy = skeleton.rebuild([new_mean, new_diag])
    assert type(copy) is Normal and copy is not dist and copy.covariance is not dist.covariance
    assert copy.loc is new_mean and copy.covariance.diag is new_diag and copy.covariance._args[0] is new_diag
    assert copy.covariance.options == {"jitter": 1e-6} and type(copy.covariance.options) is OrderedDict
    assert dist.loc is mean and dist.covariance.diag is diag  # the caller's object is untouched


def test_objects_of_another_structure_or_constant_have_another_layout_key():
    def key(dist):
        return flatten_object(dist, "Normal")[1].key

    first = key(Normal(torch.ones(3), Diagonal(torch.ones(3))))
    assert key(Normal(torch.zeros(3), Diagonal(torch.zeros(3)))) == first  # other values, one layout
    changed = Diagonal(torch.ones(3))
    changed.options["jitter"] = 1e-3
    assert key(Normal(torch.ones(3), changed)) != first
    shared = torch.ones(3)
    assert key(Normal(shared, Diagonal(shared))) != first  # one tensor in both places: another layout


def test_a_namedtuple_and_a_list_of_tensors_are_rebuilt_with_their_types():
    Pair = namedtuple("Pair", "a b")
    holder = Normal(torch.ones(2), Diagonal(torch.ones(2)))
    holder.extra = [Pair(torch.zeros(1), 3)]
    tensors, skeleton = flatten_object(holder, "Normal")
    copy = skeleton.rebuild([t + 1 for t in tensors])
    assert type(copy.extra[0]) is Pair and copy.extra[0].b == 3 and copy.extra[0].a.item() == 1.0


def test_objects_that_cannot_be_copied_safely_are_refused_with_the_reason():
    class Slotted:
        __slots__ = ("value",)

    keyed = Normal(torch.ones(2), Diagonal(torch.ones(2)))
    keyed.covariance._memo[("solve", (torch.ones(1),))] = torch.ones(2)  # a cache keyed on a tensor (its id)
    with pytest.raises(ObjectArgumentError, match="dict keyed on objects"):
        flatten_object(keyed, "Normal")
    slotted = Slotted()
    slotted.value = torch.ones(1)
    holder = Normal(torch.ones(2), Diagonal(torch.ones(2)))
    holder.extra = slotted
    with pytest.raises(ObjectArgumentError, match="__slots__"):
        flatten_object(holder, "Normal")


def test_memos_the_region_adds_to_the_copy_are_allowed_and_not_carried_to_the_callers_object():
    dist = Normal(torch.ones(3), Diagonal(torch.full((3,), 2.0)))
    tensors, skeleton = flatten_object(dist, "Normal")
    copy = skeleton.rebuild(tensors)
    nll(copy, torch.zeros(3))
    skeleton.writes()  # a lazy property and a memo entry: added, not rebound
    assert "variance" in vars(copy) and "variance" not in vars(dist) and dist.covariance._memo == {}


def test_a_region_that_rebinds_state_on_its_argument_is_refused():
    weight = torch.ones(5, requires_grad=True)

    def region(dist, target):
        dist.loc = dist.loc * 2  # state kept on the argument: the caller's object would not see it
        return ((target - dist.loc) ** 2).sum()

    step = graphed(region, backend="eager")
    with pytest.raises(GraphedInputError, match="rebinds or deletes attribute 'loc'"):
        step(_model_outputs(weight, 0), torch.zeros(5))


def test_a_loss_of_a_distribution_argument_gives_the_eager_gradients():
    # gpytorch's marginal log likelihood takes a distribution built from the model's outputs
    def run(region):
        weight = torch.linspace(0.1, 0.5, 5).requires_grad_()
        grads, losses = [], []
        for i in range(3):
            loss = region(_model_outputs(weight, i), torch.full((5,), 0.5))
            loss.backward()
            grads.append(weight.grad.clone())
            losses.append(loss.detach())
            weight.grad = None
        return grads, losses

    expected = run(nll)
    step = graphed(nll, backend="eager")
    got = run(step)
    assert all(torch.equal(w, h) for w, h in zip(expected[0], got[0]))
    assert all(torch.equal(w, h) for w, h in zip(expected[1], got[1]))
    assert step.stats["replays"] == 3 and len(step._autograd._layouts) == 3  # target, mean, diagonal


def test_a_distribution_with_another_constant_gets_graphs_of_its_own_up_to_a_limit():
    # the constant is baked into the graph: another value needs another capture; one that keeps
    # changing is no graph
    weight = torch.ones(5, requires_grad=True)
    step = graphed(nll, backend="eager")
    for jitter in (1e-6, 1e-3, 1e-6, 1e-2, 1e-1):
        dist = _model_outputs(weight, 0)
        dist.covariance.options["jitter"] = jitter
        step(dist, torch.zeros(5))
    assert len(step._autograd_layouts) == 4 and step.stats["replays"] == 5
    dist.covariance.options["jitter"] = 1.0
    with pytest.raises(GraphedInputError, match="changed layout again"):
        step(dist, torch.zeros(5))


class Strategy(torch.nn.Module):
    """A module whose forward leaves a memo of intermediates on itself (read later by the loss)."""

    def __init__(self) -> None:
        super().__init__()
        self.raw = torch.nn.Parameter(torch.tensor([0.5, 1.0, 1.5]))
        self._memo = {}

    def forward(self, first_step=False):
        self._memo = {"q": self.raw.exp()}
        if first_step:  # a first step that initialises something leaves another memo
            self._memo["init"] = self.raw * 0
        return self._memo["q"]


class Elbo(torch.nn.Module):
    def __init__(self, strategy):
        super().__init__()
        self.strategy = strategy

    def forward(self, dist, target):
        return nll(dist, target) + (self.strategy._memo["q"] ** 2).sum()


def _elbo_steps(make_region, steps=3, device="cpu", prepare=lambda strategy: None):
    torch.manual_seed(0)
    strategy = Strategy().to(device)
    prepare(strategy)
    region = make_region(Elbo(strategy))
    weight = torch.linspace(0.1, 0.5, 5, device=device).requires_grad_()
    grads = []
    for i in range(steps):
        strategy(first_step=i == 0)
        loss = region(_model_outputs(weight, i), torch.full((5,), 0.5, device=device))
        loss.backward()
        grads.append([weight.grad.clone(), strategy.raw.grad.clone()])
        weight.grad = strategy.raw.grad = None
    return grads, region


def test_a_memo_left_on_the_regions_module_is_an_input_with_the_eager_gradients():
    # the memo's tensors were computed before the call (by the model's forward): read as they are,
    # the graph's backward would replay stale values; as inputs, gradients reach the parameter
    expected, _ = _elbo_steps(lambda elbo: elbo)
    got, step = _elbo_steps(lambda elbo: graphed(elbo.forward, backend="eager"))
    for want, have in zip(expected, got):
        assert all(torch.equal(w, h) for w, h in zip(want, have))
    assert step.stats["replays"] == 3 and [name for _, name in step._autograd._held] == ["_memo"]


def test_a_memo_of_another_layout_on_a_later_step_gets_graphs_of_its_own():
    _, step = _elbo_steps(lambda elbo: graphed(elbo.forward, backend="eager"), steps=4)
    assert len(step._autograd_layouts) == 2 and step.stats["replays"] == 4


def test_an_uncopyable_memo_the_region_does_not_read_leaves_it_graphed():
    def keyed(strategy):
        strategy.by_key = {object(): strategy.raw * 2}  # a cache keyed on an object: not copyable

    expected, _ = _elbo_steps(lambda elbo: elbo, prepare=keyed)
    got, step = _elbo_steps(lambda elbo: graphed(elbo.forward, backend="eager"), prepare=keyed)
    assert all(torch.equal(w, h) for want, have in zip(expected, got) for w, h in zip(want, have))
    assert step.stats["replays"] == 3 and [name for _, name in step._autograd._held] == ["_memo"]


def test_an_uncopyable_memo_the_region_reads_is_refused_as_computed_before_the_call():
    strategy = Strategy()

    class ReadsKeyed(Elbo):
        def forward(self, dist, target):
            return nll(dist, target) + next(iter(self.strategy.by_key.values())).sum()

    strategy.by_key = {object(): strategy.raw * 2}
    step = graphed(ReadsKeyed(strategy).forward, backend="eager")
    with pytest.raises(GraphedInputError, match="computed before the call"):
        step(_model_outputs(torch.ones(5, requires_grad=True), 0), torch.zeros(5))

def test_a_region_that_rebinds_a_memo_on_its_module_is_refused():
    strategy = Strategy()

    class Rebinding(Elbo):
        def forward(self, dist, target):
            self.strategy._memo = {}  # state a graph would not keep
            return nll(dist, target)

    step = graphed(Rebinding(strategy).forward, backend="eager")
    strategy()
    with pytest.raises(GraphedInputError, match="rebinds Strategy._memo"):
        step(_model_outputs(torch.ones(5, requires_grad=True), 0), torch.zeros(5))


@pytest.mark.cuda
def test_a_distribution_argument_replays_its_backward_on_the_gpu_like_eager():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")

    def run(region):
        weight = torch.linspace(0.1, 0.5, 5, device="cuda").requires_grad_()
        grads, losses = [], []
        for i in range(4):
            x = torch.full((5,), float(i + 1), device="cuda")
            dist = Normal(x * weight, Diagonal((x * weight).exp()))
            loss = region(dist, torch.full((5,), 0.5, device="cuda"))
            loss.backward()
            grads.append(weight.grad.clone())
            losses.append(loss.detach())
            weight.grad = None
        return grads, losses

    expected = run(nll)
    step = graphed(nll)
    got = run(step)
    for want, have in zip(expected[0] + expected[1], got[0] + got[1]):
        torch.testing.assert_close(have, want)
    assert step.stats["replays"] == 4 and step.stats["eager"] == 0


@pytest.mark.cuda
def test_a_memo_on_the_regions_module_replays_its_backward_on_the_gpu_like_eager():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    expected, _ = _elbo_steps(lambda elbo: elbo, steps=5, device="cuda")
    got, step = _elbo_steps(lambda elbo: graphed(elbo.forward), steps=5, device="cuda")
    for want, have in zip(expected, got):
        for w, h in zip(want, have):
            torch.testing.assert_close(h, w)
    assert len(step._autograd_layouts) == 2 and step.stats["replays"] == 5 and step.stats["eager"] == 0
