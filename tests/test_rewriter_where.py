"""Differential tests: code rewritten to torch.where computes what the branching code did.

The fix is unsafe (applied with `--unsafe-fixes`): `torch.where` broadcasts the arms, so arms
of other shapes or dtypes give another result (shown below). Each case is a small function; we
apply the fix, execute both versions on random float CPU tensors of one shape (values around
the branch boundary, NaN and inf included) and require bitwise-equal results (`torch.equal`
with NaNs compared as equal): the ops are the same, only selected elementwise.
"""

from __future__ import annotations


import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.rewriting import fixed_source, load

CASES = {
    "if-else": """
        def f(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            if x.sum() > 0:
                z = x * 2
            else:
                z = y - 1
            return z
    """,
    "one-armed": """
        def f(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            y = y + 1
            if y.mean() > 0.5:
                y = y / 2
            return y
    """,
    "ternary": """
        def f(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            return x.abs() if (x > 0).all() else y
    """,
    "returns": """
        def f(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            if (x < 0).any():
                return x.clamp(min=0)
            else:
                return x + y
    """,
    "two-names-and-scalar-arm": """
        def f(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            if x.max() > 1:
                a = x / x.max()
                b = 0.0
            else:
                a = x
                b = y.sum()
            return a + b
    """,
    "negated": """
        def f(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            z = x
            if not torch.isfinite(x).all():
                z = torch.nan_to_num(x)
            return z
    """,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_unsafe_fix_is_offered_and_removes_the_branch(name):
    assert fixed_source(CASES[name])[1] == fixed_source(CASES[name])[0], "the torch.where fix must not be safe"
    original, fixed = fixed_source(CASES[name], unsafe=True)
    assert fixed != original and "torch.where" in fixed
    from graphsafe.analyzer.engine import check_source

    assert not [d for d in check_source(fixed, "case.py").diagnostics if d.code == "GS201"]


def same(a, b) -> bool:
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(torch.nan_to_num(a, 7.0, 8.0, 9.0), torch.nan_to_num(b, 7.0, 8.0, 9.0)) \
        and torch.equal(a.isnan(), b.isnan())


values = st.one_of(
    st.floats(min_value=-3, max_value=3, allow_nan=False, width=32),
    st.sampled_from([0.0, 0.5, 1.0, -0.0, float("nan"), float("inf"), float("-inf")]),
)
tensors = st.lists(values, min_size=1, max_size=6).map(lambda v: torch.tensor(v, dtype=torch.float32))


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=60, deadline=None)
@given(x=tensors, y=tensors)
def test_rewrite_keeps_eager_values_on_same_shape_float_inputs(name, x, y):
    original, fixed = fixed_source(CASES[name], unsafe=True)
    y = y[: len(x)] if len(y) >= len(x) else torch.cat([y, torch.zeros(len(x) - len(y))])
    expected = load(original)(x.clone(), y.clone())
    got = load(fixed)(x.clone(), y.clone())
    if name == "two-names-and-scalar-arm" and not isinstance(expected, torch.Tensor):
        expected = torch.as_tensor(expected, dtype=got.dtype)
    assert same(expected, got), f"{name}: {expected} != {got}\n{fixed}"


def test_rewrite_changes_the_dtype_of_an_integer_arm_which_is_why_it_is_unsafe():
    source = """
        def f(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            if x.sum() > 0:
                y = y / 2
            return y
    """
    original, fixed = fixed_source(source, unsafe=True)
    assert "torch.where" in fixed
    x, y = torch.tensor([-1]), torch.tensor([5, 7])  # branch not taken: the original keeps integers
    assert load(original)(x, y).dtype == torch.int64
    assert load(fixed)(x, y).dtype == torch.float32


def test_rewrite_broadcasts_arms_of_another_shape_which_is_why_it_is_unsafe():
    source = """
        def f(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            if x.sum() > 0:
                z = x.sum()
            else:
                z = y
            return z
    """
    original, fixed = fixed_source(source, unsafe=True)
    assert "torch.where" in fixed
    x, y = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])  # taken: the original returns a 0-dim sum
    assert load(original)(x, y).shape == ()
    assert load(fixed)(x, y).shape == (2,)
