"""graphed(train=True) with optimizers the step builds on its first call (pyro's PyroOptim makes
a torch Adam per parameter as it first sees one): found after the warm-up, made capturable by the
same rules as the ones found when graphed() is built, their warm-up state zeroed (a fresh
optimizer, as the eager first call had)."""

from __future__ import annotations

import pytest
import torch

from graphsafe.runtime import graphed


class LazyTrainer:
    """A step whose optimizers do not exist until its first call: one Adam per parameter."""

    def __init__(self, seed: int, device: str = "cpu") -> None:
        torch.manual_seed(seed)
        self.model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).to(device)
        self.optims: dict = {}

    def step(self, x, y):
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        for p in self.model.parameters():
            if p not in self.optims:
                self.optims[p] = torch.optim.Adam([p], lr=0.05)
            self.optims[p].step()
        for p in self.model.parameters():
            p.grad.zero_()
        return loss.detach()


def batches(n: int, device: str = "cpu"):
    gen = torch.Generator().manual_seed(7)
    return [(torch.randn(16, 4, generator=gen).to(device), torch.randn(16, 1, generator=gen).to(device))
            for _ in range(n)]


def test_optimizers_built_by_the_warm_up_are_found_and_start_fresh():
    trainer, twin = LazyTrainer(0), LazyTrainer(0)
    data = batches(5)
    g = graphed(trainer.step, data[0], train=True, backend="eager")
    built = list(trainer.optims.values())
    assert len(built) == 4 and all(any(o is b for o in g.optimizers) for b in built)
    for opt in built:  # the warm-up's steps and moments are gone: a fresh Adam
        assert all(float(v.abs().sum()) == 0 for state in opt.state.values() for v in state.values())
    for a, b in zip(trainer.model.parameters(), twin.model.parameters()):
        assert torch.equal(a, b)
    for x, y in data:  # every step as the eager twin's, the optimizers' state included
        torch.testing.assert_close(g(x, y), twin.step(x, y))
    for a, b in zip(trainer.model.parameters(), twin.model.parameters()):
        torch.testing.assert_close(a, b)
    for a, b in zip(trainer.optims.values(), twin.optims.values()):
        for state_a, state_b in zip(a.state.values(), b.state.values()):
            torch.testing.assert_close(state_a["exp_avg_sq"], state_b["exp_avg_sq"])


def test_an_optimizer_built_by_the_warm_up_off_the_gpu_is_refused_with_why():
    # CPU stand-in for a cuda graph over parameters left on the CPU: the same rule as at build
    trainer = LazyTrainer(0)
    g = graphed(trainer.step, train=True, backend="eager")
    x, y = batches(1)[0]
    g._template((x, y), {})
    trainer.step(x, y)  # the warm-up built them
    g.backend = "cuda"
    with pytest.raises(ValueError, match="capturable=False and its parameters are not all on the GPU.*built by "
                                         "the step's first call"):
        g._adopt_optimizers_built_by_warm_up([x, y], [x, y])


@pytest.mark.cuda
def test_optimizers_built_by_the_warm_up_are_made_capturable_and_replay_as_eager():
    trainer, twin = LazyTrainer(0, "cuda"), LazyTrainer(0, "cuda")
    data = batches(6, "cuda")
    g = graphed(trainer.step, train=True)
    for x, y in data:
        torch.testing.assert_close(g(x, y), twin.step(x, y))
    assert g.stats["replays"] == len(data)
    assert all(group["capturable"] for opt in trainer.optims.values() for group in opt.param_groups)
    assert all(not group["capturable"] for opt in twin.optims.values() for group in opt.param_groups)
    for a, b in zip(trainer.model.parameters(), twin.model.parameters()):
        torch.testing.assert_close(a, b)
