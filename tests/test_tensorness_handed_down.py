"""Tensor-ness handed down through calls: a parameter a function passes on, as is, to a function
of the same file or of another file of the project that uses the receiving parameter as a tensor is
a tensor in the caller too; one whose elements are passed there holds tensors
(analyzer/delegated_use.py), and the report says why."""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics, project_diagnostics


def branch_messages(source: str) -> list[tuple[int, str]]:
    found = diagnostics("import torch\n\n" + textwrap.dedent(source))
    return [(d.start.line - 2, d.message) for d in found if d.code == "GS201"]


def test_a_parameter_passed_to_a_checker_asserting_a_tensor_is_a_tensor_in_the_caller():
    found = branch_messages("""
        def _check_time(name, t):
            assert isinstance(t, torch.Tensor), name

        def prepare(y0, t):  # graphsafe: region
            _check_time("t", t)
            if t[0] > t[1]:
                t = -t
            return y0, t
        """)
    assert [line for line, _ in found] == [7]
    assert "`t` is a tensor: `_check_time(\"t\", t)` passes it where `_check_time` uses it as one" in found[0][1]


def test_the_hand_down_follows_a_chain_of_calls_and_keywords():
    found = branch_messages("""
        def _inner(x):
            return x.detach()

        def _middle(scale, x=None):
            return _inner(x) * scale

        def outer(x):  # graphsafe: region
            if x.sum() > 0:
                return _middle(2.0, x=x)
            return x
        """)
    assert [line for line, _ in found] == [9]


def test_a_method_called_through_self_hands_down_too():
    found = branch_messages("""
        class Solver:
            def _norm(self, v):
                return v.abs().max()

            def step(self, err):  # graphsafe: region
                scale = self._norm(err)
                if err > 1:
                    return scale
                return 0
        """)
    assert [line for line, _ in found] == [8]


def test_a_parameter_rebound_before_the_call_is_not_handed_down():
    assert branch_messages("""
        def _inner(x):
            return x.detach()

        def outer(x):  # graphsafe: region
            if x:
                pass
            x = torch.as_tensor(x)
            return _inner(x)
        """) == []


def test_a_parameter_tested_with_isinstance_before_the_call_is_not_handed_down():
    assert branch_messages("""
        def _inner(x):
            return x.detach()

        def outer(x):  # graphsafe: region
            if x:
                pass
            if isinstance(x, torch.Tensor):
                return _inner(x)
            return x
        """) == []


def test_a_callee_that_does_not_use_the_parameter_as_a_tensor_hands_nothing_down():
    assert branch_messages("""
        def _inner(x):
            return x + 1

        def outer(x):  # graphsafe: region
            if x > 0:
                return _inner(x)
            return x
        """) == []


def test_a_parameter_whose_elements_are_passed_to_a_tensor_user_holds_tensors():
    found = branch_messages("""
        def to_d(x, sigma, denoised):
            return (x - denoised) / sigma.exp()

        def sample(model, x, sigmas):  # graphsafe: region
            for i in range(len(sigmas) - 1):
                d = to_d(x, sigmas[i], model(x))
                if sigmas[i + 1] > 0:
                    x = x + d
            return x
        """)
    assert [line for line, _ in found] == [8]
    assert "`sigmas` holds tensors: `to_d(x, sigmas[i], model(x))` passes an element of it" in found[0][1]


def test_an_entry_passed_by_a_string_key_says_nothing_of_the_container():
    found = branch_messages("""
        def scale(x):
            return x.exp()

        def step(batch):  # graphsafe: region
            y = scale(batch["x"])
            if batch["n"] > 0:
                y = y + 1
            return y
        """)
    assert found == []


UTILS = """
def append_dims(x, target_dims):
    return x[(...,) + (None,) * (target_dims - x.dim())]
"""

SAMPLING = """
from . import utils


def to_d(x, sigma, denoised):
    return (x - denoised) / utils.append_dims(sigma, x.ndim)


def sample(model, x, sigmas):  # graphsafe: region
    for i in range(len(sigmas) - 1):
        d = to_d(x, sigmas[i], model(x))
        if sigmas[i + 1] > 0:
            x = x + d
    return x
"""


def test_a_parameter_passed_to_a_tensor_user_of_another_file_is_a_tensor(tmp_path):
    found = project_diagnostics(tmp_path, {"pkg/__init__.py": "", "pkg/utils.py": UTILS, "pkg/sampling.py": SAMPLING})
    assert [(d.path.rpartition("/")[2], d.start.line, d.code) for d in found] == [("sampling.py", 12, "GS201")]


def test_a_function_of_another_file_that_does_not_use_it_as_a_tensor_hands_nothing_down(tmp_path):
    utils = UTILS.replace("x.dim()", "len(x)")
    found = project_diagnostics(tmp_path, {"pkg/__init__.py": "", "pkg/utils.py": utils, "pkg/sampling.py": SAMPLING})
    assert found == []
