"""`assert <tensor tests joined by and/or/not>, msg` → `torch._assert_async(<one boolean tensor>,
msg)` (rewriters/tensor_condition.py through nonfinite.assert_fix): the rewrite on small
synthetic code, what is refused, and a CPU equivalence test (a passing check gives the same
result, a failing one raises with the same message)."""

from __future__ import annotations

import textwrap

import pytest

from graphsafe.config import Settings
from graphsafe.fixer import fix_text

MONOTONE = """
    def check_times(name, t: torch.Tensor):  # graphsafe: region
        diff = t[1:] > t[:-1]
        assert diff.all() or (~diff).all(), '{} must be strictly increasing or decreasing'.format(name)
        return t * 2
"""


def fixed(source: str) -> str:
    text = "import torch\n" + textwrap.dedent(source)
    outcome = fix_text(text, "case.py", Settings(), [], unsafe=True)
    assert outcome.error is None
    return outcome.fixed


def test_assert_of_tensor_tests_joined_by_or_becomes_one_device_check():
    assert ("torch._assert_async(torch.logical_or(diff.all(), (~diff).all()), "
            "'{} must be strictly increasing or decreasing'.format(name))") in fixed(MONOTONE)


def test_assert_of_not_and_becomes_logical_not_and_logical_and():
    source = """
        def step(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            assert not (x < 0).any() and (y > 0).all(), "bad input"
            return x + y
    """
    assert 'torch._assert_async(torch.logical_and(~((x < 0).any()), (y > 0).all()), "bad input")' in fixed(source)


@pytest.mark.parametrize("test, why", [
    ("(x > 0).all() or flag", "a Python bool beside the tensor: logical_or would not take it"),
    ("x.numel() == 0 or (x[0] > 0).all()", "the right operand indexes what the left one guards"),
])
def test_assert_with_an_operand_that_is_not_a_plain_tensor_test_is_left_as_it_is(test, why):
    source = f"""
        def step(x: torch.Tensor, flag: bool):  # graphsafe: region
            assert {test}, "bad input"
            return x * 2
    """
    assert "_assert_async" not in fixed(source), why


def test_assert_whose_format_message_reads_a_tensor_is_left_as_it_is():
    source = """
        def step(x: torch.Tensor):  # graphsafe: region
            assert (x > 0).all() or (x < -1).all(), "bad: {}".format(x.max())
            return x * 2
    """
    assert "_assert_async" not in fixed(source)


def test_device_check_of_an_or_passes_and_fails_where_the_assert_did():
    torch = pytest.importorskip("torch")
    runs = {}
    for label, text in (("original", "import torch\n" + textwrap.dedent(MONOTONE)), ("fixed", fixed(MONOTONE))):
        namespace: dict = {}
        exec(compile(text, "case.py", "exec"), namespace)
        outcomes = []
        for t in (torch.tensor([0.0, 1.0, 2.0]), torch.tensor([3.0, 1.0, -2.0]), torch.tensor([0.0, float("nan"), 1.0]),
                  torch.tensor([0.0, 2.0, 1.0]), torch.tensor([1.0, 1.0, 2.0])):
            try:
                outcomes.append(namespace["check_times"]("t", t))
            except (AssertionError, RuntimeError) as error:
                outcomes.append(type(error).__name__ + ": " + str(error))
        runs[label] = outcomes
    original, rewritten = runs["original"], runs["fixed"]
    for before, after in zip(original[:3], rewritten[:3]):  # monotone either way, or all comparisons False (NaN)
        assert torch.allclose(before, after, rtol=0, atol=0, equal_nan=True)
    for before, after in zip(original[3:], rewritten[3:]):  # neither: both fail, with the same message
        assert before.startswith("AssertionError: t must be strictly")
        assert after.startswith("RuntimeError") and "t must be strictly increasing or decreasing" in after


@pytest.mark.parametrize("message", ["'underflow in dt {}'.format(dt.item())", "'bad state: {}'.format(y0)",
                                     "f'bad state {y0}'", "f'{len(y0)} rows'"])
def test_assert_whose_message_reads_a_value_each_call_is_left_as_it_is(message):
    """`_assert_async` formats its message on every call: a `.item()`, any call, or a name bound
    by unpacking (maybe a tensor) in it would be a host read each step, where assert formatted it
    only on failure."""
    source = f"""
        def step(state, dt: torch.Tensor):  # graphsafe: region
            y0, t0 = state  # unpacked: y0 may be a tensor
            assert (t0 + dt > t0).all(), {message}
            return dt * 2
    """
    assert "_assert_async" not in fixed(source)
