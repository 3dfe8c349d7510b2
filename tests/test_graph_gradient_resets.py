"""`graphsafe graph` on a training step that resets its gradients with fresh tensors
(`p.grad = torch.zeros_like(p.grad)`, GS401, as pyro's `zero_grads`): the reset is zeroed in place
where the gradient is proven to exist, said in a note, nothing is left blocking, and the written
program computes the original's parameters and gradients, step after step."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tests.helpers import run_cli

torch = pytest.importorskip("torch")

UTIL = textwrap.dedent('''\
    import torch


    def zero_grads(tensors):
        for p in tensors:
            if p.grad is not None:
                p.grad = torch.zeros_like(p.grad)
''')

TRAIN = textwrap.dedent('''\
    import torch

    from util import zero_grads


    class Trainer:
        def __init__(self, model, opt):
            self.model = model
            self.opt = opt

        def step(self, x, y):
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.opt.step()
            zero_grads(list(self.model.parameters()))
            return loss.detach()
''')


def _run(root):
    """Four steps of Trainer.step under `root`: each step's loss, parameters and gradients."""
    sys.path.insert(0, str(root))
    try:
        for module in ("util", "train"):
            sys.modules.pop(module, None)
        import train

        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        trainer = train.Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        out = []
        for i in range(4):
            gen = torch.Generator().manual_seed(i)
            loss = trainer.step(torch.randn(8, 3, generator=gen), torch.randn(8, 1, generator=gen))
            out.append([loss] + [t.detach().clone() for p in model.parameters() for t in (p, p.grad)])
        return out
    finally:
        sys.path.remove(str(root))
        for module in ("util", "train"):
            sys.modules.pop(module, None)


def test_graph_zeroes_an_existing_gradient_in_place_says_so_and_keeps_the_numbers(tmp_path, capsys):
    original, graphed = tmp_path / "original", tmp_path / "graphed"
    for root in (original, graphed):
        root.mkdir()
        (root / "util.py").write_text(UTIL, encoding="utf-8")
        (root / "train.py").write_text(TRAIN, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(graphed), "--region", "Trainer.step", "--no-cache", "--json")
    summary = json.loads(out)
    assert not [b for b in summary["blocking"] if b["code"] == "GS401"], summary["blocking"]
    assert any("util.py:7: `p.grad = torch.zeros_like(p.grad)` → `with torch.no_grad(): p.grad.zero_()`" in note
               for note in summary["notes"]), summary["notes"]
    assert "with torch.no_grad(): p.grad.zero_()" in (graphed / "util.py").read_text(encoding="utf-8")
    before, after = _run(original), _run(graphed)
    assert not torch.equal(before[0][0], before[1][0])  # the steps differ from each other
    for step_a, step_b in zip(before, after):
        for a, b in zip(step_a, step_b):
            assert torch.equal(a, b)
