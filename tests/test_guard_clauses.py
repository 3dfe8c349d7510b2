"""Guard clauses: an early `return` on a Python value, each case beside a look-alike that must stay
silent:

- a guard with a bare `return` before in-place tensor work (`if epoch >= k: return`) is a per-step
  branch (GS301) when its number is per step, not when it is a config value;
- a guard on a number parameter (`if t == 0.0: return x`) does not hide the tensor conditions
  after it (GS201): the kinds of names bound in the guarded rest are those of the walk, not a
  premature look-ahead's.
"""

from __future__ import annotations

from tests.helpers import lines_of


found = lines_of  # the lines where a code is reported


GUARD = """\
import torch
import torch.nn as nn


def cancel(epoch: int, model: nn.Module, freeze: int) -> None:
    if epoch >= freeze:
        return
    for n, p in model.named_parameters():
        if "last" in n and p.grad is not None:
            p.grad.zero_()


class Trainer:
    def __init__(self, model, cfg):
        self.model = model
        self.cfg = cfg
        self.epoch = 0

    def step(self, x):  # graphsafe: region
        cancel({arg}, self.model, 3)

    def fit(self, it):
        self.epoch = it // 10
"""


def test_bare_return_guard_on_a_per_step_number():
    assert found(GUARD.format(arg="self.epoch"), "GS301") == [6]


def test_bare_return_guard_on_a_config_value_stays_silent():
    assert found(GUARD.format(arg="self.cfg.freeze_epochs"), "GS301") == []


def test_tensor_condition_after_a_guard_clause_on_a_number_parameter():
    source = """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def accept(x: torch.Tensor, t: float) -> torch.Tensor:
            if t == 0.0:
                return x
            acc = (x > t).long().cumprod(dim=1)
            depth = acc.shape[1]
            while depth > 0 and not acc[:, depth - 1].any():
                depth -= 1
            return acc[:, :depth].sum(dim=1)
    """
    assert found(source, "GS201") == [9]
    assert found(source, "GS301") == [5, 7]


def test_shape_condition_after_a_guard_clause_stays_silent():
    source = """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def accept(x: torch.Tensor, t: float) -> torch.Tensor:
            if t == 0.0:
                return x
            acc = (x > 0).long().cumprod(dim=1)
            depth = acc.shape[1]
            while depth > 0 and acc.shape[0] > 1:
                depth -= 1
            return acc[:, :depth].sum(dim=1)
    """
    assert found(source, "GS201") == []
    assert found(source, "GS301") == [5]


def test_guard_lookahead_keeps_kinds_bound_in_the_guarded_rest():
    source = """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def step(x: torch.Tensor, scale: float) -> torch.Tensor:
            if scale == 1.0:
                return x
            scores = x.softmax(-1)
            if scores.shape[0] > 1:
                print("batched")
            if scores[:, 0].any():
                print("hit")
            return scores
    """
    assert found(source, "GS201") == [10]
