"""Differential test: `metrics.append(t.item())` → `metrics.append(t.detach())` (and
`self.last = t.item()` → `self.last = t.detach()`) record the same values.

Original and fixed code run a few steps on random CPU tensors (NaN/inf included); every entry
of the fixed list, read back outside the region with `float(v)`, must equal the original
Python number exactly (NaN where it was NaN): the stored value is the same element, only its
host copy moves to the reader. The fix is unsafe because the entries are now 0-dim tensors.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.rewriting import fixed_source, load

CASES = {
    "attribute-list": """
        class Meter:
            def __init__(self):
                self.losses = []

            def step(self, x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
                loss = ((x - y) ** 2).mean()
                self.losses.append(loss.item())
                return loss

        def f(xs, ys):
            m = Meter()
            for x, y in zip(xs, ys):
                m.step(x, y)
            return m.losses
    """,
    "attribute-store": """
        class Meter:
            def __init__(self):
                self.last = 0.0

            def step(self, x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
                loss = ((x - y) ** 2).mean()
                self.last = (loss * 2).item()
                return loss

        def f(xs, ys):
            m, seen = Meter(), []
            for x, y in zip(xs, ys):
                m.step(x, y)
                seen.append(m.last)  # read outside the step
            return seen
    """,
    "global-list-expression": """
        HISTORY = []

        def step(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            z = x * y
            HISTORY.append((z.max() - y.min()).item())
            return z

        def f(xs, ys):
            HISTORY.clear()
            for x, y in zip(xs, ys):
                step(x, y)
            return list(HISTORY)
    """,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_offered_only_as_unsafe(name):
    _, safe = fixed_source(CASES[name], unsafe=False)
    assert ".detach()" not in safe
    _, unsafe = fixed_source(CASES[name], unsafe=True)
    assert ".detach()" in unsafe and ".item()" not in unsafe


def test_not_offered_when_the_number_is_used_otherwise():
    source = """
        def f(x: torch.Tensor, out: list):  # graphsafe: region
            out.append(x.sum().item() + 1)
            out.append(x.sum().item(), 2)
    """
    _, fixed = fixed_source(source, unsafe=True)
    assert ".detach()" not in fixed


values = st.one_of(st.floats(-5, 5, width=32), st.sampled_from([float("nan"), float("inf"), float("-inf"), -0.0]))
steps = st.lists(st.lists(values, min_size=3, max_size=3), min_size=1, max_size=4)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=50, deadline=None)
@given(xs=steps, ys=steps)
def test_same_recorded_values(name, xs, ys):
    original, fixed = fixed_source(CASES[name], unsafe=True)
    xs = [torch.tensor(v) for v in xs]
    ys = [torch.tensor(v) for v in ys][: len(xs)] + [torch.zeros(3)] * max(0, len(xs) - len(ys))
    expected = load(original)(xs, ys)
    got = load(fixed)(xs, ys)
    assert all(isinstance(v, torch.Tensor) and v.dim() == 0 for v in got)
    got = [float(v) for v in got]
    assert len(got) == len(expected)
    for a, b in zip(expected, got):
        assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
