"""The tracer and the static check give `bool(t)` and a branch on a tensor the same codes.

The rule docs (graphsafe/rules/sync.py GS105, branch.py GS201): an explicit `bool()` of a tensor
reads its value as a Python object, like `int()`/`float()` (GS105, tensor-to-python); `if t:`,
`while t:`, `not t`, `t and u` branch on it (GS201, tensor-branch). The tracer sees
Tensor.__bool__ for both and tells them apart by the instruction the user's line is running.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from graphsafe.analyzer.engine import check_source
from graphsafe.config import Settings
from graphsafe.runtime import trace
from graphsafe.runtime.classify import code_from_source

pytestmark = pytest.mark.usefixtures("cpu_only_tracer")

PROGRAM = '''\
import torch


def explicit_call_in_a_test(x):
    if bool(torch.isnan(x).any()):
        return x * 0
    return x


def explicit_call_bound(x):
    finite = bool(torch.isfinite(x).all())
    return x if finite else x * 0


def branch(x):
    if x.sum() > 100:
        return x * 0
    return x


def negation(x):
    return x * 2 if not (x > 100).any() else x


def any_of_tensors(x):
    if any(torch.isnan(row).any() for row in x):
        return x * 0
    return x
'''
FUNCTIONS = ("explicit_call_in_a_test", "explicit_call_bound", "branch", "negation", "any_of_tensors")


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "bool_naming_program.py"
    path.write_text(PROGRAM)
    spec = importlib.util.spec_from_file_location("bool_naming_program", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield path, module
    sys.modules.pop("bool_naming_program", None)


def traced_codes(path, module) -> set[tuple[int, str]]:
    x = torch.tensor([[0.5, -1.0], [2.0, 3.0]])
    found = set()
    for name in FUNCTIONS:
        report = trace(getattr(module, name), x, steps=1)
        found |= {(f.line, f.code) for f in report.findings if f.filename == str(path)}
    return found


def static_codes(path) -> set[tuple[int, str]]:
    # parameters are unannotated: the static side needs to know `x` is a tensor, as the tracer does
    source = path.read_text().replace("(x):", "(x: torch.Tensor):")
    result = check_source(source, str(path), Settings(regions=("*",)))
    return {(d.start.line, d.code) for d in result.diagnostics if d.code in ("GS105", "GS201")}


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(PROGRAM.splitlines(), 1) if text in line)


def test_an_explicit_bool_of_a_tensor_is_tensor_to_python_in_the_trace(program):
    found = traced_codes(*program)
    assert (line_of("if bool(torch.isnan"), "GS105") in found
    assert (line_of("finite = bool("), "GS105") in found
    assert not {code for line, code in found if line in (line_of("if bool(torch.isnan"), line_of("finite = bool("))} - {"GS105"}


def test_a_branch_on_a_tensor_stays_tensor_branch_in_the_trace(program):
    found = traced_codes(*program)
    for text in ("if x.sum() > 100", "if not (x > 100).any()", "if any(torch.isnan(row)"):
        assert {code for line, code in found if line == line_of(text)} == {"GS201"}, text


def test_the_tracer_and_the_static_check_name_each_bool_construct_alike(program):
    path, module = program
    assert traced_codes(path, module) == static_codes(path)


def test_a_capture_failure_on_an_explicit_bool_is_named_as_the_static_check_names_it():
    assert code_from_source("if bool(torch.isnan(x).any()):") == "GS105"
    assert code_from_source("finite = bool(torch.isfinite(x).all())") == "GS105"
    assert code_from_source("if torch.isnan(x).any():") == "GS201"
