"""Differential test: `output_size=` added to `repeat_interleave` gives bitwise-equal results.

Random literal repeat counts (zeros included) are written into the source, graphsafe fixes it,
and both versions run on random CPU tensors (NaN/inf included) along a random dim (or
flattened): the op is the same, so results must be `torch.equal` (NaNs compared as equal),
and an input of the wrong size must raise in both versions.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphsafe.config import Settings
from graphsafe.fixer import fix_text

TEMPLATES = {
    "function": "r = torch.repeat_interleave(x, torch.tensor({reps}){dim})",
    "method": "r = x.repeat_interleave(torch.tensor({reps}, dtype=torch.long){dim})",
}


def source(template: str, reps: list[int], dim: int | None) -> str:
    line = template.format(reps=reps, dim="" if dim is None else f", dim={dim}")
    return f"import torch\n\n\ndef f(x: torch.Tensor):  # graphsafe: region\n    {line}\n    return r\n"


def fixed(text: str) -> str:
    outcome = fix_text(text, "case.py", Settings(), [], unsafe=False)
    assert outcome.error is None
    return outcome.fixed


def load(text: str):
    namespace: dict = {}
    exec(compile(text, "case.py", "exec"), namespace)
    return namespace["f"]


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.nan_to_num(7.0, 8.0, 9.0), b.nan_to_num(7.0, 8.0, 9.0)) \
        and torch.equal(a.isnan(), b.isnan())


values = st.sampled_from([0.0, -1.5, 2.0, float("nan"), float("inf"), float("-inf"), 1e30])


@pytest.mark.parametrize("kind", sorted(TEMPLATES))
@settings(max_examples=60, deadline=None)
@given(reps=st.lists(st.integers(0, 3), min_size=2, max_size=5), dim=st.sampled_from([None, 0, 1, -1]),
       other=st.integers(1, 3), fill=st.lists(values, min_size=1, max_size=4), wrong=st.booleans())
def test_output_size_keeps_results(kind, reps, dim, other, fill, wrong):
    original = source(TEMPLATES[kind], reps, dim)
    new = fixed(original)
    assert f"output_size={sum(reps)}" in new
    n = len(reps) + (1 if wrong else 0)
    shape = (n,) if dim is None else ((n, other) if dim == 0 else (other, n))
    x = torch.tensor(fill * (n * other))[: n * (1 if dim is None else other)].reshape(shape)
    if wrong:
        for f in (load(original), load(new)):
            with pytest.raises(RuntimeError):
                f(x.clone())
        return
    assert same(load(original)(x.clone()), load(new)(x.clone()))


@pytest.mark.parametrize("line", [
    "r = torch.repeat_interleave(x, torch.tensor([2]), dim=0)",  # broadcasts: size depends on x
    "r = torch.repeat_interleave(x, torch.tensor([1, -1]), dim=0)",  # raises at run time anyway
    "r = torch.repeat_interleave(x, torch.tensor([1.0, 2.0]), dim=0)",  # float repeats: an error
    "r = torch.repeat_interleave(x, torch.tensor([1, 2], dtype=torch.float32), dim=0)",
    "r = torch.repeat_interleave(x, torch.tensor([[1, 2]]), dim=0)",  # 2-D repeats
    "r = torch.repeat_interleave(x, y, dim=0)",  # not known statically
    "r = torch.repeat_interleave(x, torch.tensor([1, n]), dim=0)",
])
def test_not_offered_when_the_size_is_not_provable(line):
    text = f"import torch\n\n\ndef f(x: torch.Tensor, y: torch.Tensor, n: int):  # graphsafe: region\n    {line}\n    return r\n"
    assert "output_size" not in fixed(text)
