"""A check that only warns and repairs (rewriters/warn_repair.py): the repair made unconditional,
the warning skipped while a CUDA graph is captured. The rewrite on small synthetic code, what is
refused and why, and CPU equivalence (values, gradients and warnings of eager calls; under a
simulated capture the repair still applies and nothing warns)."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest

from graphsafe.model import Diagnostic, Position
from graphsafe.rewriters.warn_repair import CAPTURING, unconditional_repairs

PROPERTY = textwrap.dedent('''\
    import warnings

    import torch


    class Gaussian:
        def __init__(self, var):
            self._var = var

        @property
        def variance(self):
            variance = self._var * 1.0
            floor = 1e-6
            if variance.lt(floor).any():
                warnings.warn(f"negative variances, rounded up to {floor}")
                variance = variance.clamp_min(floor)
            return variance
''')

FINITE = textwrap.dedent('''\
    import logging

    import torch

    log = logging.getLogger(__name__)


    def scores(x):
        s = x * 2
        if not torch.isfinite(s).all():
            log.warning("non-finite scores")
            s = torch.nan_to_num(s, nan=0.0, posinf=1e4, neginf=-1e4)
        return s
''')


def rewrite(tmp_path: Path, source: str, gs201_lines=()) -> tuple[str, object]:
    path = tmp_path / "case.py"
    path.write_text(source)
    found = [Diagnostic("GS201", "`if` on a tensor value", str(path), Position(line, 8), Position(line, 9))
             for line in gs201_lines]
    result = unconditional_repairs(found, [path])
    return path.read_text(), result


def test_clamp_min_under_lt_any_in_a_property_becomes_unconditional_with_an_eager_only_warning(tmp_path):
    text, result = rewrite(tmp_path, PROPERTY)
    assert f"        if not ({CAPTURING}) and (variance.lt(floor).any()):\n" in text
    assert "\n        variance = variance.clamp_min(floor)\n        return variance\n" in text
    assert len(text.splitlines()) == len(PROPERTY.splitlines())  # no line moved: listed lines stay right
    assert result.changed and not result.refused


def test_nan_to_num_under_not_isfinite_all_in_the_reach_becomes_unconditional(tmp_path):
    text, result = rewrite(tmp_path, FINITE, gs201_lines=[10])
    assert f"    if not ({CAPTURING}) and (not torch.isfinite(s).all()):\n" in text
    assert "\n    s = torch.nan_to_num(s, nan=0.0, posinf=1e4, neginf=-1e4)\n    return s\n" in text


@pytest.mark.parametrize("old, new, why", [
    ("variance = variance.clamp_min(floor)", "variance = variance.clamp_min(2 * floor)", "another bound"),
    ("variance = variance.clamp_min(floor)", "variance = variance.clamp_max(floor)", "another bound or direction"),
    ("variance = variance.clamp_min(floor)", "variance = variance.abs()", "not a clamp_min"),
    ("variance = variance.clamp_min(floor)", "self.count = 1", "not `name = <repair>`"),
    ("            warnings.warn(", "            self.count += 1\n            warnings.warn(",
     "not logging followed by one repair"),
])
def test_a_repair_not_proven_the_identity_is_refused_with_its_line_and_why(tmp_path, old, new, why):
    source = PROPERTY.replace(old, new)
    assert source != PROPERTY
    text, result = rewrite(tmp_path, source, gs201_lines=[14])
    assert text == source
    assert len(result.refused) == 1 and ":14: " in result.refused[0] and why in result.refused[0], result.refused


def test_an_if_with_an_else_is_left_as_it_is(tmp_path):
    source = PROPERTY.replace("            variance = variance.clamp_min(floor)\n",
                              "            variance = variance.clamp_min(floor)\n        else:\n            pass\n")
    assert source != PROPERTY
    text, result = rewrite(tmp_path, source, gs201_lines=[14])
    assert text == source and "else branch" in result.refused[0]


def test_settles_the_if_and_its_warning_but_not_the_repair_line(tmp_path):
    _, result = rewrite(tmp_path, PROPERTY)
    path = str(tmp_path / "case.py")

    def settled(code, line):
        return result.settles(Diagnostic(code, "", path, Position(line, 0), Position(line, 1)))

    assert settled("GS201", 14) and settled("GS501", 15)
    assert not settled("GS201", 16) and not settled("GS402", 14)


def _run(source: str, var, capturing: bool, monkeypatch):
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(source, "case.py", "exec"), namespace)
    with monkeypatch.context() as patch:
        if capturing:  # a CUDA graph being captured, as torch would say it
            patch.setattr(torch.cuda, "is_available", lambda: True)
            patch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
        leaf = var.clone().requires_grad_(True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = namespace["Gaussian"](leaf).variance
        (grad,) = torch.autograd.grad(out.sum(), leaf)
    return out.detach(), grad, [str(w.message) for w in caught]


@pytest.mark.parametrize("values", [[0.5, 2.0, 1e-6], [-0.5, 2.0, 0.0], [float("nan"), 1.0, -3.0]])
def test_eager_calls_give_the_same_values_gradients_and_warnings(tmp_path, monkeypatch, values):
    torch = pytest.importorskip("torch")
    text, _ = rewrite(tmp_path, PROPERTY)
    var = torch.tensor(values)
    out_a, grad_a, warned_a = _run(PROPERTY, var, False, monkeypatch)
    out_b, grad_b, warned_b = _run(text, var, False, monkeypatch)
    assert torch.equal(out_a.nan_to_num(7.0), out_b.nan_to_num(7.0)) and torch.equal(grad_a, grad_b)
    assert warned_a == warned_b


def test_under_capture_the_repair_applies_and_nothing_warns(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    text, _ = rewrite(tmp_path, PROPERTY)
    var = torch.tensor([-0.5, 2.0, 0.0])
    out_eager, grad_eager, _ = _run(PROPERTY, var, False, monkeypatch)
    out, grad, warned = _run(text, var, True, monkeypatch)
    assert torch.equal(out, out_eager) and torch.equal(grad, grad_eager) and warned == []
