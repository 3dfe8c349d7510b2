"""Differential test: a literal `torch.tensor(...)` hoisted into `__init__` computes the same values.

Each case is a small nn.Module whose region method builds a constant; graphsafe hoists it
(safe and unsafe fixes applied). Original and fixed modules run on random CPU tensors (NaN/inf
and broadcasting shapes included), twice each, and must give bitwise-equal results with the
same dtype and device (`torch.equal`, NaNs compared as equal): the same ops run on a tensor
with the same values, created earlier. Cases where the shared tensor could be changed or
escape, or its device is not literal, must not be rewritten.
"""

from __future__ import annotations

import textwrap

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphsafe.analyzer.engine import check_source
from graphsafe.config import Settings
from graphsafe.fixer import fix_text

HEADER = "import torch\nimport torch.nn as nn\n\n\n"


def module(body: str, init_extra: str = "") -> str:
    return HEADER + textwrap.dedent(f"""\
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(3)){init_extra}

            def forward(self, x):  # graphsafe: region
        """) + textwrap.indent(textwrap.dedent(body), "        ")


CASES = {
    # name: (body, applicability expected: "safe" / "unsafe")
    "assigned-float-cpu": ("""\
        scale = torch.tensor([0.5, -2.0, 3.0], device="cpu")
        return x * scale + self.w
        """, "unsafe"),  # float data without dtype: the default dtype is read in __init__
    "explicit-dtype": ("""\
        scale = torch.tensor([[1.5], [2.0]], dtype=torch.float64, device=torch.device("cpu"))
        return torch.maximum(x, scale) - scale.sum()
        """, "safe"),
    "int-data-inline": ("""\
        return torch.where(x > torch.tensor(0, device="cpu"), x, -x)
        """, "safe"),
    "no-device": ("""\
        offsets = torch.tensor([1, 2, 3])
        return x + offsets
        """, "unsafe"),  # the default device is read in __init__
    "method-may-alias": ("""\
        offsets = torch.tensor([1, 2, 3], device="cpu")
        return x + offsets.float()
        """, None),  # `.float()` of a float tensor returns the tensor itself: refused
    "bool-mask": ("""\
        keep = torch.tensor([True, False, True], device="cpu")
        return x * keep
        """, "safe"),
    "two-constants": ("""\
        a = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float32, device="cpu")
        b = torch.tensor(2, device="cpu")
        return torch.clamp(x, min=-1.0) * a + b
        """, "safe"),
}

REFUSED = {
    "in-place": "c = torch.tensor([1.0, 2.0, 3.0], device='cpu')\nc.add_(x)\nreturn c",
    "returned": "c = torch.tensor([1.0, 2.0, 3.0], device='cpu')\nreturn c",
    "augmented": "c = torch.tensor([1.0, 2.0, 3.0], device='cpu')\nc += x\nreturn x * c",
    "view": "c = torch.tensor([1.0, 2.0, 3.0], device='cpu')\nv = c[0]\nreturn x * v",
    "to-alias": "c = torch.tensor([1.0, 2.0, 3.0], device='cpu')\nreturn x * c.to(x.dtype)",
    "device-of-input": "c = torch.tensor([1.0, 2.0, 3.0], device=x.device)\nreturn x * c",
    "requires-grad": "c = torch.tensor([1.0, 2.0, 3.0], device='cpu', requires_grad=True)\nreturn x * c",
    "stored": "c = torch.tensor([1.0, 2.0, 3.0], device='cpu')\nself.last = c\nreturn x * c",
    "rebound": "c = torch.tensor([1.0, 2.0, 3.0], device='cpu')\nc = c * 2\nreturn x * c",
    "out-arg": "c = torch.tensor([1.0, 2.0, 3.0], device='cpu')\ntorch.mul(x, 2, out=c)\nreturn x * c",
    "not-literal": "n = 3\nc = torch.tensor([1.0, n], device='cpu')\nreturn x * c",
}


def fixed(source: str, unsafe: bool = True) -> str:
    outcome = fix_text(source, "case.py", Settings(), [], unsafe=unsafe)
    assert outcome.error is None, outcome.error
    return outcome.fixed


def build(source: str) -> nn.Module:
    namespace: dict = {}
    exec(compile(source, "case.py", "exec"), namespace)
    return namespace["M"]()


nn = torch.nn


@pytest.mark.parametrize("name", sorted(CASES))
def test_hoist_is_offered_with_the_stated_applicability(name):
    body, applicability = CASES[name]
    source = module(body)
    hits = [d for d in check_source(source, "case.py").diagnostics if d.code == "GS402"]
    assert hits
    if applicability is None:
        assert all(d.fix is None for d in hits)
        return
    assert {d.fix.applicability.value for d in hits if d.fix} == {applicability} or name == "two-constants"
    new = fixed(source)
    assert "_const" in new and "torch.tensor" not in new.split("def forward")[1]
    assert not [d for d in check_source(new, "case.py").diagnostics if d.code == "GS402"]
    assert fixed(new) == new  # idempotent
    if applicability == "unsafe":
        assert fixed(source, unsafe=False) == source


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_not_offered_when_the_tensor_could_change_or_escape(name):
    source = module(REFUSED[name])
    assert "_const" not in fixed(source)


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.device == b.device and a.shape == b.shape and torch.equal(
        a.nan_to_num(7.0, 8.0, 9.0), b.nan_to_num(7.0, 8.0, 9.0)) and torch.equal(a.isnan(), b.isnan())


values = st.one_of(st.floats(-4, 4, width=32), st.sampled_from([0.0, -0.0, float("nan"), float("inf"), float("-inf")]))


@pytest.mark.parametrize("name", sorted(n for n, (_, a) in CASES.items() if a))
@settings(max_examples=40, deadline=None)
@given(data=st.lists(values, min_size=6, max_size=6), rows=st.sampled_from([(3,), (1, 3), (2, 3)]))
def test_hoisted_constant_keeps_results(name, data, rows):
    source = module(CASES[name][0])
    original, rewritten = build(source), build(fixed(source))
    shape = rows if name != "explicit-dtype" else (2, 3)
    x = torch.tensor(data, dtype=torch.float32)[: torch.Size(shape).numel()].reshape(shape)
    with torch.no_grad():
        for _ in range(2):  # a second call sees the shared constant unchanged
            assert same(original(x.clone()), rewritten(x.clone()))
