"""Kinds where an `if` without `else` joins two paths (analyzer/branch_joins.py): a name that is
a tensor on one path and a Python value on the other is a tensor after the `if`, with a reason
the report prints; a body that always leaves does not reach the join."""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics


def branch_messages(source: str) -> list[tuple[int, str]]:
    found = diagnostics("import torch\n\n" + textwrap.dedent(source))
    return [(d.start.line - 2, d.message) for d in found if d.code == "GS201"]


def test_a_tensor_rebound_to_a_python_bool_on_one_path_is_still_a_tensor_after_the_if():
    found = branch_messages("""
        def step(ratio: torch.Tensor, dt: float, hi: float):  # graphsafe: region
            accept = ratio <= 1
            if dt > hi:
                accept = False
            if accept:
                return 1
            return 0
        """)
    assert [line for line, _ in found] == [6]
    assert "`accept` is a tensor on one path through the `if` before this" in found[0][1]


def test_a_python_bool_rebound_to_a_tensor_on_one_path_is_a_tensor_after_the_if():
    found = branch_messages("""
        def step(ratio: torch.Tensor, dt: float):  # graphsafe: region
            flag = False
            if dt > 2:
                flag = ratio > 3
            if flag:
                return 1
            return 0
        """)
    assert [line for line, _ in found] == [6]


def test_a_body_that_returns_does_not_reach_the_join():
    assert branch_messages("""
        def step(ratio: torch.Tensor, dt: float):  # graphsafe: region
            flag = False
            if dt > 2:
                flag = ratio > 3
                return flag
            if flag:
                return 1
            return 0
        """) == []


def test_an_if_with_an_else_keeps_the_last_binding():
    assert branch_messages("""
        def step(ratio: torch.Tensor, dt: float):  # graphsafe: region
            if dt > 2:
                flag = ratio > 3
            else:
                flag = False
            flag = dt > 1
            if flag:
                return 1
            return 0
        """) == []


def test_python_values_on_both_paths_stay_python_values():
    assert branch_messages("""
        def step(ratio: torch.Tensor, dt: float):  # graphsafe: region
            flag = False
            if dt > 2:
                flag = True
            if flag:
                return 1
            return 0
        """) == []


def test_a_tensor_rounded_up_to_a_power_of_two_on_one_path_is_still_a_tensor_after_the_if():
    found = diagnostics("import torch\n\n" + textwrap.dedent("""
        def pad(targets: torch.Tensor, b: int, mps: bool):  # graphsafe: region
            n = targets.max()
            if mps:
                n = 1 << (int(n) - 1).bit_length()
            return torch.zeros(b, n, 5)
        """))
    assert [(d.start.line - 2, d.code) for d in found if "size" in d.message] == [(6, "GS105")]
