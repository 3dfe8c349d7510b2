"""graphed's capture boundary for per-step Python values: `numbers=` carries a changing Python
number into the graph through a device scalar, `batched=[]` serves fixed-shape steps, and an
optimizer's Python lr reaches the graph through a device tensor refreshed before each replay.
Run with backend="eager" (the same input handling, no GPU)."""

from __future__ import annotations

import pytest
import torch

from graphsafe.runtime import graphed
from graphsafe.runtime.graphed import GraphedInputError


def scale(x: torch.Tensor, temperature: float) -> torch.Tensor:
    return x / temperature


def test_a_named_number_reaches_the_step_with_each_calls_value():
    x = torch.arange(4.0)
    step = graphed(scale, (x, 2.0), numbers=[1], batched=[], backend="eager")
    for temperature in (2.0, 4.0, 0.5):
        assert torch.equal(step(x, temperature), x / temperature)


def test_a_named_number_is_a_device_scalar_inside_the_step():
    seen = []

    def probe(x, t):
        seen.append(type(t))
        return x * t

    step = graphed(probe, (torch.ones(2), 3), numbers=[1], batched=[], backend="eager")
    step(torch.ones(2), 5)
    assert torch.Tensor in seen and seen[-1] is torch.Tensor


def test_a_keyword_number_is_named_by_its_keyword():
    x = torch.ones(3)
    step = graphed(scale, (x,), sample_kwargs={"temperature": 2.0}, numbers=["temperature"], batched=[],
                   backend="eager")
    assert torch.equal(step(x, temperature=8.0), x / 8.0)


def test_an_unnamed_number_that_changes_is_an_error_not_a_wrong_replay():
    x = torch.ones(3)
    step = graphed(scale, (x, 2.0), batched=[], backend="eager")
    with pytest.raises(GraphedInputError, match="GS301"):
        step(x, 4.0)


def test_a_number_keeps_its_type_across_calls():
    step = graphed(scale, (torch.ones(2), 2.0), numbers=[1], batched=[], backend="eager")
    with pytest.raises(GraphedInputError, match="captured as float"):
        step(torch.ones(2), 3)


def test_numbers_names_only_numbers():
    with pytest.raises(GraphedInputError, match="not an int or a float"):
        graphed(scale, (torch.ones(2), "hot"), numbers=[1], batched=[], backend="eager")


def test_batched_empty_serves_a_step_without_a_batch_dimension():
    state = torch.zeros(())

    def accumulate(value):
        state.add_(value.sum())
        return state.clone()

    step = graphed(accumulate, (torch.ones(3),), batched=[], backend="eager", reset_after_warmup=True)
    assert step.buckets == (0,)
    assert float(step(torch.full((3,), 2.0))) == 6.0


def test_a_step_without_tensor_arguments_gets_one_fixed_shape_graph():
    state = torch.ones(3)

    def double():
        state.mul_(2)
        return state.sum()

    step = graphed(double, (), backend="eager", reset_after_warmup=True)
    assert step.buckets == (0,)
    assert float(step()) == 6.0


def test_batched_names_that_are_not_batched_tensors_are_an_error():
    with pytest.raises(GraphedInputError, match="none of batched"):
        graphed(scale, (torch.ones(()), 2.0), batched=[1], backend="eager")


def _train_setup(optimizer_kwargs):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1, **optimizer_kwargs)

    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return model, opt, train_step


def test_a_scheduler_changed_lr_reaches_every_replay_of_a_fused_optimizer():
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    model, opt, train_step = _train_setup({"fused": True})
    twin, twin_opt, twin_step = _train_setup({"fused": True})
    step = graphed(train_step, (x, y), train=True, optimizer=opt, backend="eager")
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    twin_sched = torch.optim.lr_scheduler.StepLR(twin_opt, step_size=1, gamma=0.5)
    for _ in range(4):
        assert torch.equal(step(x, y), twin_step(x, y))
        sched.step(), twin_sched.step()
    assert torch.equal(model.weight, twin.weight)
    assert isinstance(opt.param_groups[0]["lr"], float)  # between calls the group holds its number


def test_the_lr_tensor_is_the_groups_during_capture_and_a_number_after():
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    model, opt, train_step = _train_setup({"fused": True})
    seen = []

    def spy(x, y):
        seen.append(type(opt.param_groups[0]["lr"]))
        return train_step(x, y)

    step = graphed(spy, (x, y), train=True, optimizer=opt, backend="eager")
    assert seen and all(kind is torch.Tensor for kind in seen)
    assert step._group_lrs[0].tensor is not None
    opt.param_groups[0]["lr"] = 0.01
    step(x, y)
    assert float(step._group_lrs[0].tensor) == pytest.approx(0.01)


def test_a_changed_lr_an_optimizer_reads_as_a_number_is_an_error():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(x):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

    step = graphed(train_step, (torch.randn(8, 4),), train=True, optimizer=opt, backend="eager")
    opt.param_groups[0]["lr"] = 0.05
    with pytest.raises(GraphedInputError, match="GS301"):
        step(torch.randn(8, 4))


def test_a_graphed_core_installed_on_its_own_object_keeps_its_graphs():
    # `graphsafe graph` wires obj.step_core = graphed(obj.step_core): the object graphed snapshots
    # around warm-up holds the graphed callable itself, which must not be restored to "no graphs"
    class Counter:
        def __init__(self):
            self.total = torch.zeros(())
            self.calls = 0

        def step(self, x):
            out = self.step_core(x)
            self.calls += 1
            return out

        def step_core(self, x):
            self.total.add_(x.sum())
            return self.total.clone()

    counter = Counter()
    counter.step_core = graphed(counter.step_core, batched=[], backend="eager")
    first = counter.step(torch.ones(2))
    second = counter.step(torch.ones(2))
    assert counter.step_core.graphs and (float(first), float(second)) == (2.0, 4.0)
    assert counter.calls == 2


def test_graph_method_graphs_every_instance_of_a_class_and_leaves_an_eager_twin():
    from graphsafe.runtime.graphed import GraphedCallable, graph_method

    class Scaler:
        def __init__(self, k):
            self.k = torch.tensor(float(k))

        def step(self, x):
            return self.step_core(x)

        def step_core(self, x):
            return x * self.k

    installed = graph_method(Scaler, "step_core", batched=[], backend="eager")
    a, b, twin = Scaler(2), Scaler(3), Scaler(2)
    installed.eager(twin)
    assert isinstance(a.step_core, GraphedCallable) and a.step_core is a.step_core
    assert a.step_core is not b.step_core and not isinstance(twin.step_core, GraphedCallable)
    x = torch.arange(3.0)
    assert torch.equal(a.step(x), twin.step(x)) and torch.equal(b.step(x), x * 3)


def test_calls_with_another_structure_get_graphs_of_their_own_up_to_a_limit():
    def read(x, cache, pair):
        return x + cache["k"] + (pair[1] if pair is not None else 0)

    x, cache, pair = torch.ones(4, 2), {"k": torch.ones(4, 2), "v": torch.zeros(4, 2)}, (torch.ones(4, 2), torch.ones(4, 2))
    step = graphed(read, (x, cache, pair), backend="eager")
    fresh = {"k": torch.full((4, 2), 3.0), "v": torch.zeros(4, 2)}
    assert torch.equal(step(x, fresh, pair), read(x, fresh, pair))  # the flat fast path
    # a decoder's first step passes None where later ones pass state: a graph of its own for each
    nested = {"k": torch.full((4, 2), 2.0), "v": [torch.zeros(4, 2)]}
    for call in ((x, nested, pair), (x, fresh, None), (x, nested, pair), (x, fresh, pair)):
        assert torch.equal(step(*call), read(*call))
    assert len(step._structures) == 2 and step.stats["replays"] == 5  # one counter for all of them
    step(x, {"v": torch.zeros(4, 2), "k": torch.ones(4, 2)}, pair)  # same keys, another order: the 4th
    with pytest.raises(GraphedInputError, match="structure differs from the 4 captured ones"):
        step(x, {"k": torch.ones(4, 2)}, pair)  # a structure that keeps changing is no graph


def test_a_value_restore_keeps_an_attribute_the_step_rebound_to_a_tensor():
    # graphed() undoes its warm-up with restore_values(); an attribute the captured step rebound to a
    # tensor (a dashboard statistic) must keep the graph's tensor, which every replay refreshes
    from graphsafe.runtime.snapshot import Snapshot, Tracked

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stat = 0.0
            self.count = 0

    class Owner:
        def __init__(self):
            self.block = Block()
            self.last = 0.0

    owner = Owner()
    saved = Snapshot(Tracked([("owner", owner), ("block", owner.block)]), rng=False)
    owner.block.stat, owner.block.count, owner.last = torch.ones(()), 4, torch.zeros(())
    saved.restore_values()
    assert isinstance(owner.block.stat, torch.Tensor) and isinstance(owner.last, torch.Tensor)
    assert owner.block.count == 0  # numbers the warm-up advanced go back
    saved.restore()
    assert owner.block.stat == 0.0 and owner.last == 0.0  # the full restore puts everything back


def test_a_step_whose_state_is_sized_for_the_batch_captures_without_the_smaller_probe():
    # graphed probes one row fewer to tell which outputs carry the batch; a KV cache sized for
    # the batch rejects that probe (decode_loop on an H100): the outputs are then judged by size
    cache = torch.zeros(3, 4)

    def step(tokens):
        cache.index_copy_(0, torch.arange(tokens.shape[0]), tokens.expand(-1, 4))
        return cache.sum(1) + tokens.squeeze(1)

    tokens = torch.ones(3, 1)
    graphed_step = graphed(step, (tokens,), backend="eager")
    assert torch.equal(graphed_step(tokens * 2), torch.full((3,), 10.0))


def test_an_optimizer_a_module_keeps_is_found_and_made_capturable_for_a_training_step():
    # stable-baselines3 keeps the optimizer on the policy module (`self.policy.optimizer`): a
    # train=True step on the agent must find it there (on a GPU it failed capture as GS701)
    from graphsafe.runtime.snapshot import resolve_state

    class Policy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(3, 1)
            self.optimizer = torch.optim.Adam(self.parameters(), lr=0.1)

    class Agent:
        def __init__(self):
            self.policy = Policy()

        def train(self, x):
            loss = self.policy.net(x).sum()
            self.policy.optimizer.zero_grad()
            loss.backward()
            self.policy.optimizer.step()
            return loss.detach()

    agent = Agent()
    found = resolve_state(None, agent.train, (), {}).optimizers()
    assert [o for _, o in found] == [agent.policy.optimizer]
