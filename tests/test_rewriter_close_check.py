"""`assert torch.allclose(...)` kept on the device by `graph` (rewriters/close_check.py): the
rewritten check computes what the original did, call after call, and still fails where it failed."""

from __future__ import annotations

import textwrap

import pytest
import torch

from graphsafe.rewriters.close_check import allclose_asserts

PROGRAM = textwrap.dedent('''\
    import torch as T


    def route(logits, bias):
        weights = T.softmax(logits + bias, dim=-1)
        assert T.allclose(weights.sum(dim=-1), T.ones_like(weights[:, 0]), atol=1e-4)
        assert weights.allclose(weights * 1.0), "drift"
        return weights.topk(2, dim=-1).values
''')
AT = {(6, 11), (7, 11)}


def _load(source: str):
    namespace: dict = {}
    exec(compile(source, "<program>", "exec"), namespace)
    return namespace["route"]


def test_both_forms_become_device_checks_of_isclose_all_with_the_message_kept():
    new, lines = allclose_asserts(PROGRAM, AT)
    assert lines == [6, 7]
    assert ("T._assert_async(T.isclose(weights.sum(dim=-1), T.ones_like(weights[:, 0]), atol=1e-4).all(), "
            '"assertion failed")') in new
    assert 'T._assert_async(T.isclose(weights, weights * 1.0).all(), "drift")' in new
    assert new.count("\n") == PROGRAM.count("\n")


def test_the_rewritten_check_computes_the_same_over_steps_and_still_fails_where_the_assert_did():
    original, rewritten = _load(PROGRAM), _load(allclose_asserts(PROGRAM, AT)[0])
    gen = torch.Generator().manual_seed(0)
    for step in range(4):
        logits, bias = torch.randn(5, 6, generator=gen), torch.full((6,), 0.1 * step)
        torch.testing.assert_close(rewritten(logits, bias), original(logits, bias), rtol=0, atol=0)
    bad = torch.tensor([[float("nan")] * 6])
    with pytest.raises(AssertionError):
        original(bad, torch.zeros(6))
    with pytest.raises(RuntimeError):  # _assert_async on the CPU: at once; on CUDA a device-side assert
        rewritten(bad, torch.zeros(6))


def test_other_positions_f_string_messages_and_tests_that_are_not_the_call_are_left():
    assert allclose_asserts(PROGRAM, {(5, 0)}) == (None, [])
    f_message = PROGRAM.replace('"drift"', 'f"drift {bias}"')
    assert allclose_asserts(f_message, {(7, 11)}) == (None, [])
    negated = PROGRAM.replace("assert T.allclose(", "assert not T.allclose(")
    assert allclose_asserts(negated, {(6, 15)}) == (None, [])
    assert allclose_asserts(PROGRAM.replace("import torch as T", "import numpy"), AT) == (None, [])
