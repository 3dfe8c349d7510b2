"""Differential tests: `.item()` / `float(t)` rewritten to keep the tensor compute the same values.

Each case is a one-line function; graphsafe's fix is applied (unsafe fixes included), then
original and fixed run on random CPU tensors: floating operands of every dtype (float32,
float64, bfloat16, float16), scalar tensors of float and integer dtypes and of shapes (), (1,)
and (1, 1), NaN and inf included, operands that broadcast. Required: **bitwise** equality
(same dtype, same shape, `torch.equal` with NaNs compared as equal) — the kernels are the same,
only the scalar arrives as a 0-dim tensor instead of a Python number. The one documented
difference (an integer/bool operand is promoted differently, which is why such fixes are
unsafe) is pinned by its own test.
"""

from __future__ import annotations


import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphsafe.analyzer.engine import check_source
from graphsafe.config import Settings
from graphsafe.fixer import fix_text
from graphsafe.model import Applicability

CASES = {
    "mul-item": "return x * s.item()",
    "add-item": "return x + s.item()",
    "sub-item": "return x - s.item()",
    "mul-float": "return x * float(s)",
    "reduction": "return x * s.sum().item()",
    "expression": "return x * (s + 1).item()",
    "binding": "v = s.item()\ny = x * v\nreturn y + v - v",
    "binding-float": "v = float(s)\nreturn (x + v) * v",
}


def program(body: str, cast: str = "") -> str:
    lines = ["import torch", "", "", "def f(x: torch.Tensor, s: torch.Tensor):  # graphsafe: region", f"    x = x{cast}"]
    return "\n".join(lines + ["    " + line for line in body.split("\n")]) + "\n"


def fixed_source(body: str, cast: str = "", unsafe: bool = True) -> tuple[str, str]:
    original = program(body, cast)
    outcome = fix_text(original, "case.py", Settings(), [], unsafe=unsafe)
    assert outcome.error is None, outcome.error
    return original, outcome.fixed


def load(source: str):
    namespace: dict = {}
    exec(compile(source, "case.py", "exec"), namespace)
    return namespace["f"]


def same(a, b) -> bool:
    return (
        a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.isnan(), b.isnan())
        and torch.equal(torch.nan_to_num(a, 7.0, 8.0, 9.0), torch.nan_to_num(b, 7.0, 8.0, 9.0))
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_fix_removes_the_sync(name):
    original, fixed = fixed_source(CASES[name])
    assert fixed != original and ".item()" not in fixed and "float(s)" not in fixed
    left = [d for d in check_source(fixed, "case.py").diagnostics if d.code in ("GS101", "GS105")]
    assert left == []
    assert fix_text(fixed, "case.py", Settings(), [], unsafe=True).fixed == fixed  # idempotent


def test_fix_is_unsafe():
    source = program("return torch.softmax(x, -1) * s.item()")
    assert fix_text(source, "case.py", Settings(), [], unsafe=False).fixed == source
    diagnostics = check_source(source, "case.py").diagnostics
    assert [d.fix.applicability for d in diagnostics if d.code == "GS101"] == [Applicability.UNSAFE]


@pytest.mark.parametrize("body", ["return s.item() / x", "return x / s.item()", "return x / float(s)", "return s.item() * x", "return float(s) - x", "return x ** s.item()",
                                  "return x * int(s)", "v = s.item()\nreturn x * v, v", "v = s.item()\nreturn v * x",
                                  "v = s.item()\nv += 1\nreturn x * v", "v = float(s)\nif v > 0:\n    x = x * v\nreturn x",
                                  "v = s.item()\ng = lambda: x * v\nreturn x * v"])
def test_no_fix_where_values_could_differ(body):
    original, fixed = fixed_source(body)
    assert fixed == original


values = st.one_of(
    st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, width=32),
    st.sampled_from([0.0, -0.0, 1.0, 0.1, 1e-8, 65504.0, 1e30, float("nan"), float("inf"), float("-inf")]),
)
float_dtypes = st.sampled_from([torch.float32, torch.float64, torch.bfloat16, torch.float16])
scalar_dtypes = st.sampled_from([torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int32])
scalar_shapes = st.sampled_from([(), (1,), (1, 1)])
x_shapes = st.sampled_from([(1,), (3,), (2, 3), (1, 4)])  # 0-dim operands: see below


@st.composite
def operands(draw):
    shape = draw(x_shapes)
    n = 1
    for d in shape:
        n *= d
    x = torch.tensor(draw(st.lists(values, min_size=n, max_size=n)), dtype=torch.float64).reshape(shape)
    x = x.to(draw(float_dtypes))
    s_dtype = draw(scalar_dtypes)
    raw = draw(values)
    if not s_dtype.is_floating_point:
        raw = draw(st.integers(-1000, 1000))
    s = torch.tensor(raw, dtype=torch.float64).to(s_dtype).reshape(draw(scalar_shapes))
    return x, s


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=80, deadline=None)
@given(pair=operands())
def test_rewrite_keeps_eager_values_bitwise(name, pair):
    x, s = pair
    original, fixed = fixed_source(CASES[name])
    expected = load(original)(x.clone(), s.clone())
    got = load(fixed)(x.clone(), s.clone())
    assert same(expected, got), f"{name}: {expected!r} != {got!r} (x {x.dtype}, s {s.dtype}{tuple(s.shape)})\n{fixed}"


def test_documented_dtype_differences():
    """Why the fix is unsafe: integer operands, and 0-dim operands of another float dtype."""
    original, fixed = fixed_source("return x * s.item()")
    x = torch.tensor([1, 2, 3])
    s = torch.tensor(0.5, dtype=torch.float64)
    assert load(original)(x, s).dtype == torch.get_default_dtype()
    assert load(fixed)(x, s).dtype == torch.float64
    loss = torch.tensor(1.5, dtype=torch.bfloat16)
    assert load(original)(loss, torch.tensor(0.5)).dtype == torch.bfloat16
    assert load(fixed)(loss, torch.tensor(0.5)).dtype == torch.float32


@settings(max_examples=80, deadline=None)
@given(pair=operands())
def test_zero_dim_operand_of_the_same_dtype_is_bitwise_equal(pair):
    x, s = pair
    x = x.reshape(-1)[:1].reshape(()).to(s.dtype) if s.dtype.is_floating_point else x.reshape(-1)[:1].reshape(())
    original, fixed = fixed_source("return x * s.item()")
    if not s.dtype.is_floating_point:
        s = s.to(x.dtype)
    assert same(load(original)(x, s), load(fixed)(x, s))


def test_more_than_one_element_still_raises():
    original, fixed = fixed_source("return x * s.item()")
    for source in (original, fixed):
        with pytest.raises(RuntimeError):
            load(source)(torch.ones(3), torch.ones(2))
