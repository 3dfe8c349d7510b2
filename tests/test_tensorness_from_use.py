"""Tensor-ness from use: a parameter or local nothing declares is a tensor where the function
itself uses it as one (a method only tensors have, a torch function taking only tensors), and the
report says why; Python `max`/`min` of tensors compare them on the host (GS201)."""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics


def branch_messages(source: str) -> list[tuple[int, str]]:
    found = diagnostics("import torch\n\n" + textwrap.dedent(source))
    return [(d.start.line - 2, d.message) for d in found if d.code == "GS201"]


def test_a_local_whose_exp_is_taken_is_a_tensor_in_a_ternary_and_the_message_says_why():
    found = branch_messages("""
        def step(self, energy_new, energy_old):  # graphsafe: region
            delta = self.kinetic(energy_new) - energy_old
            direction = 1 if self.threshold < -delta else -1
            accept = (-delta).exp().clamp(max=1.0)
            return direction, accept
        """)
    assert [line for line, _ in found] == [4]
    assert "`delta` is a tensor: `(-delta).exp()` uses it as one" in found[0][1]


def test_a_parameter_whose_dim_is_read_is_a_tensor_before_that_use_too():
    found = branch_messages("""
        def step(x):  # graphsafe: region
            if x > 0:
                return x.dim()
            return 0
        """)
    assert [line for line, _ in found] == [3]
    assert "`x` is a tensor: `x.dim()` uses it as one" in found[0][1]


def test_a_name_tested_with_isinstance_stays_unknown():
    assert branch_messages("""
        def step(x):  # graphsafe: region
            if isinstance(x, float):
                return x
            if x > 0:
                return x.abs()
            return x
        """) == []


def test_a_name_bound_to_a_number_keeps_that_kind_whatever_else_is_called_on_it():
    assert branch_messages("""
        def step(n: int, t: torch.Tensor):  # graphsafe: region
            scale = 2.0
            if scale > 1:
                t = t * scale
            return t.exp()
        """) == []


def test_methods_numpy_arrays_share_are_no_evidence():
    assert branch_messages("""
        def step(self, value):  # graphsafe: region
            bad = self.check(value)
            if bad:
                pass
            return bad.any() + bad.sum()
        """) == []


def test_python_max_of_tensors_compares_them_on_the_host():
    found = branch_messages("""
        def step(y0, f0):  # graphsafe: region
            d1 = torch.linalg.norm(y0)
            d2 = torch.linalg.norm(f0)
            return 0.01 / max(d1, d2)
        """)
    assert [line for line, _ in found] == [5]
    assert "Python `max(...)`" in found[0][1]


def test_python_max_over_a_comprehension_of_tensors_is_a_branch():
    found = branch_messages("""
        def step(ts):  # graphsafe: region
            return max([t.abs() for t in ts])
        """)
    assert [line for line, _ in found] == [3]
    assert "`t` is a tensor: `t.abs()` uses it as one" in found[0][1]


def test_python_max_of_sizes_or_with_a_key_is_no_branch():
    assert branch_messages("""
        def step(x: torch.Tensor, items):  # graphsafe: region
            n = max(x.shape[0], 4)
            best = max(items, key=len)
            return min(n, len(best))
        """) == []


def test_the_result_of_max_of_tensors_is_a_tensor():
    found = branch_messages("""
        def step(a: torch.Tensor, b: torch.Tensor):  # graphsafe: region
            m = max(a, b)
            if m > 1:
                pass
        """)
    assert [line for line, _ in found] == [3, 4]


def test_a_number_or_tensor_check_with_overload_stubs_returns_a_bool_tensor_for_a_tensor_only(tmp_path):
    from tests.helpers import project_diagnostics

    found = project_diagnostics(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/util.py": """
            import numbers
            from typing import overload
            import torch


            @overload
            def any_nan(x: numbers.Number) -> bool: ...
            @overload
            def any_nan(x: torch.Tensor) -> torch.Tensor: ...
            def any_nan(x):
                if isinstance(x, numbers.Number):
                    return x != x
                return torch.isnan(x).any()
            """,
        "pkg/step.py": """
            import torch
            from pkg.util import any_nan


            def step(x: torch.Tensor):  # graphsafe: region
                energy = x.sum()
                e = energy * 2 if any_nan(energy) else energy
                if any_nan(1.0):
                    pass
                return e
            """,
    })
    branches = [d for d in found if d.code == "GS201"]
    assert [d.start.line for d in branches] == [8]
    assert "`any_nan(...)` returns a tensor" in branches[0].message


def test_a_parameter_asserted_to_be_a_tensor_is_one_though_isinstance_tests_it():
    found = branch_messages("""
        def check(t):  # graphsafe: region
            assert isinstance(t, torch.Tensor), "t must be a tensor"
            diff = t[1:] > t[:-1]
            assert diff.all() or (~diff).all()
        """)
    assert {line for line, _ in found} == {5}  # each operand of the `or`
    assert "`t` is a tensor: `assert isinstance(t, torch.Tensor)" in found[0][1]


def test_the_result_of_a_tensor_only_math_method_on_an_unknown_value_is_a_tensor():
    found = branch_messages("""
        def step(y0, norm):  # graphsafe: region
            d0 = norm(y0).abs()
            if d0 < 1e-5:
                pass
        """)
    assert [line for line, _ in found] == [4]
    assert "`norm(y0).abs()` is a tensor: `.abs()` is a tensor method" in found[0][1]


def test_a_parameter_an_element_of_which_gets_a_tensor_method_has_tensor_elements():
    # a noise schedule: `sigmas[i].log()` says its elements are tensors, so comparing one branches on the device
    found = branch_messages("""
        def step(model, x, sigmas, i: int):  # graphsafe: region
            if sigmas[i + 1] == 0:
                return model(x)
            return x * (-sigmas[i].log()).exp()
        """)
    assert [line for line, _ in found] == [3]
    assert "`sigmas` is a tensor: `sigmas[i].log()` uses it as one" in found[0][1]


def test_a_logger_call_with_arguments_is_no_tensor_use():
    found = branch_messages("""
        def step(x, logger, steps):  # graphsafe: region
            logger.log("x", x)
            if steps[0] > 2:
                return x
            return steps[1].log("y")
        """)
    assert found == []


def test_a_number_accumulating_tensors_becomes_a_tensor():
    # `running_loss = 0` then `running_loss += loss` in a training loop: reading it is a sync
    found = diagnostics("import torch\n\n\ndef train(model, batches):\n    running = 0\n"
                        "    for batch in batches:  # graphsafe: region\n        loss = model(batch).sum()\n"
                        "        running += loss\n        logged = running.item()\n        running = 0\n")
    assert [(d.start.line, d.code) for d in found] == [(9, "GS101")]
