"""Per-step sources where an `if` joins (analyzer/branch_joins.joined_sources): each branch of an
`if`/`else` starts from what was per-step before the `if`, so a name rebound in one branch is
still per-step in the other; after the `if` a name is per-step where any branch that reaches the
join leaves it so; a branch that returns does not reach it."""

from __future__ import annotations

from tests.helpers import lines_of


def test_a_name_rebound_in_one_branch_is_still_per_step_in_the_other():
    source = ("import torch\n\n\ndef box(lam):\n    return (0, 4, 0, 4), lam\n\n\n"
              "def step(x: torch.Tensor, lam: float, cut: bool):  # graphsafe: region\n"
              "    t = lam * 0.5\n"
              "    if cut:\n        (y0, y1, x0, x1), t = box(t)\n        x = x.flip(0)\n"
              "    else:\n        x = x.mul(t)\n    return x\n")
    assert lines_of(source, "GS301") == [14]


def test_after_an_if_a_name_is_per_step_where_a_branch_that_reaches_the_join_leaves_it_so():
    source = ("import torch\n\n\ndef step(x: torch.Tensor, lam: float, warm: bool):  # graphsafe: region\n"
              "    scale = 1.0\n    if warm:\n        scale = lam * 2\n    return x * scale\n")
    assert lines_of(source, "GS301") == [8]


def test_a_branch_that_returns_does_not_reach_the_join():
    source = ("import torch\n\n\ndef step(x: torch.Tensor, lam: float, warm: bool):  # graphsafe: region\n"
              "    scale = 1.0\n    if warm:\n        scale = lam * 2\n        return x\n    return x * scale\n")
    assert lines_of(source, "GS301") == []
