"""A gradient reset by a fresh tensor, zeroed in place instead (rewriters/grad_zero.py, `graph`
only): the rewrite on small code, what is refused and why, and CPU equivalence of a training loop
that resets its gradients that way, over several steps with changing inputs."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
import torch

from graphsafe.model import Diagnostic, Position
from graphsafe.rewriters.grad_zero import gradients_zeroed_in_place

ZERO_GRADS = textwrap.dedent('''\
    import torch


    def zero_grads(tensors):
        for p in tensors:
            if p.grad is not None:
                p.grad = torch.zeros_like(p.grad)


    def train(params, batches, lr=0.1):
        opt = torch.optim.Adam(params, lr=lr)
        seen = []
        for x in batches:
            loss = sum(((p * x) ** 2).sum() for p in params)
            loss.backward()
            opt.step()
            seen.append([p.grad.clone() for p in params])
            zero_grads(params)
            seen.append([p.grad.clone() for p in params])
        return seen
''')


def rewrite(tmp_path: Path, source: str, name: str = "case") -> tuple[str, object, Path]:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    lines = [i for i, line in enumerate(source.splitlines(), 1) if ".grad = " in line]
    found = [Diagnostic("GS401", "`p.grad` holds state", str(path), Position(line, 8), Position(line, 9))
             for line in lines]
    result = gradients_zeroed_in_place(found, [path])
    return path.read_text(), result, path


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_existing_gradient_reset_by_zeros_like_is_zeroed_in_place_on_the_same_line(tmp_path):
    text, result, _ = rewrite(tmp_path, ZERO_GRADS)
    assert "        if p.grad is not None:\n            with torch.no_grad(): p.grad.zero_()\n" in text
    assert len(text.splitlines()) == len(ZERO_GRADS.splitlines())
    assert result.changed and not result.refused
    settled = Diagnostic("GS401", "", str(tmp_path / "case.py"), Position(7, 16), Position(7, 17))
    assert result.settles(settled)


def test_a_loop_resetting_gradients_in_place_computes_what_the_fresh_tensors_did(tmp_path):
    original = load((tmp_path / "orig.py", (tmp_path / "orig.py").write_text(ZERO_GRADS))[0])
    _, _, path = rewrite(tmp_path, ZERO_GRADS, name="rewritten")
    rewritten = load(path)
    batches = [torch.randn(3, generator=torch.Generator().manual_seed(i)) for i in range(5)]
    torch.manual_seed(0)
    start = [torch.randn(3), torch.randn(3)]
    runs = []
    for module in (original, rewritten):
        params = [t.clone().requires_grad_(True) for t in start]
        runs.append((module.train(params, batches), params))
    (seen_a, params_a), (seen_b, params_b) = runs
    assert len(seen_a) == 10
    for step_a, step_b in zip(seen_a, seen_b):
        for a, b in zip(step_a, step_b):
            assert torch.equal(a, b)
    for a, b in zip(params_a, params_b):
        assert torch.equal(a, b)
    assert not torch.equal(seen_a[0][0], seen_a[2][0])  # per-step gradients do change


@pytest.mark.parametrize("old, new, why", [
    ("if p.grad is not None:\n            p.grad = torch.zeros_like(p.grad)",
     "if True:\n            p.grad = torch.zeros_like(p.grad)", "does not test"),
    ("if p.grad is not None:\n            p.grad = torch.zeros_like(p.grad)",
     "if p.grad is not None:\n            pass\n        p.grad = torch.zeros_like(p.grad)", "not proven to exist"),
    ("p.grad = torch.zeros_like(p.grad)", "p.grad = torch.zeros_like(p)", "not of the gradient itself"),
    ("p.grad = torch.zeros_like(p.grad)", "p.grad = torch.zeros_like(p.grad, dtype=torch.float64)",
     "not of the gradient itself"),
    ("p.grad = torch.zeros_like(p.grad)", "p.grad = torch.ones_like(p.grad)", "not `torch.zeros_like"),
    ("if p.grad is not None:\n            p.grad = torch.zeros_like(p.grad)",
     "if p.grad is not None:\n            print(1)\n            p.grad = torch.zeros_like(p.grad)",
     "not the first statement"),
    ("if p.grad is not None:\n            p.grad = torch.zeros_like(p.grad)",
     "if p.data is not None:\n            p.grad = torch.zeros_like(p.grad)", "does not test"),
    ("p.grad = torch.zeros_like(p.grad)", "p.grad = torch.zeros_like(p.grad); q = 1", "alone on its line"),
])
def test_a_gradient_reset_the_pattern_does_not_prove_equal_is_kept_with_why(tmp_path, old, new, why):
    source = ZERO_GRADS.replace(old, new)
    assert source != ZERO_GRADS
    text, result, _ = rewrite(tmp_path, source)
    assert text == source
    assert not result.changed and len(result.refused) == 1 and why in result.refused[0]


def test_zeros_like_of_another_module_is_not_rewritten(tmp_path):
    source = "import numpy as torch_like\nimport torch\n\n\ndef f(p):\n    if p.grad is not None:\n" \
             "        p.grad = torch_like.zeros_like(p.grad)\n"
    text, result, _ = rewrite(tmp_path, source)
    assert text == source and "not the torch module" in result.refused[0]
