"""`graphsafe graph` on a step whose only hazards are checks that validate or warn: an assert of
tensor tests joined by `or`, a property that warns and clamps, torch.distributions' argument
validation. Nothing is left blocking, each change is a printed note, and the written program
computes the original's numbers (and warns and validates as before) on CPU, call after call."""

from __future__ import annotations

import json
import sys
import textwrap
import warnings

import pytest

from tests.helpers import run_cli

torch = pytest.importorskip("torch")

MODEL = textwrap.dedent('''\
    import warnings

    import torch


    class Noise(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.raw = torch.nn.Parameter(torch.tensor([0.5, -0.2, 1.0]))

        @property
        def variance(self):
            variance = self.raw * 1.0
            if variance.lt(1e-4).any():
                warnings.warn("variance below 1e-4, clamped")
                variance = variance.clamp_min(1e-4)
            return variance
''')

LOSS = textwrap.dedent('''\
    import torch


    class Loss:
        def __init__(self, noise):
            self.noise = noise

        def forward(self, t, x):
            return self.nll(t, x)

        def nll(self, t: torch.Tensor, x: torch.Tensor):
            diff = t[1:] > t[:-1]
            assert diff.all() or (~diff).all(), "{} must be monotone".format("t")
            scale = self.noise.variance.sqrt()
            d = torch.distributions.Normal(torch.zeros(3), scale)
            return -d.log_prob(x).sum()
''')


def _write(tmp_path):
    (tmp_path / "noise.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "loss.py").write_text(LOSS, encoding="utf-8")


def _losses(root, name: str):
    """Three calls of Loss.forward on the program under `root`: values, gradients, warnings."""
    sys.path.insert(0, str(root))
    try:
        for module in ("noise", "loss"):
            sys.modules.pop(module, None)
        import loss
        import noise

        model = noise.Noise()
        step = loss.Loss(model)
        out = []
        for i in range(3):
            t = torch.linspace(0, 1, 4) * (1 if i % 2 else -1)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                value = step.forward(t, torch.randn(3, generator=torch.Generator().manual_seed(i)))
            (grad,) = torch.autograd.grad(value, model.raw)
            out.append((value.detach(), grad, [str(w.message) for w in caught]))
        with pytest.raises(ValueError):  # eager: the distribution still validates a bad scale
            torch.distributions.Normal(torch.zeros(3), -torch.ones(3))
        return out
    finally:
        sys.path.remove(str(root))
        for module in ("noise", "loss"):
            sys.modules.pop(module, None)


def test_graph_makes_validation_checks_eager_only_says_so_and_keeps_the_numbers(tmp_path, capsys):
    original, graphed = tmp_path / "original", tmp_path / "graphed"
    for root in (original, graphed):
        root.mkdir()
        _write(root)
    code, out, err = run_cli(capsys, "graph", str(graphed), "--region", "Loss.forward", "--no-cache", "--json")
    summary = json.loads(out)
    assert summary["blocking"] == [] and code == 0, summary["blocking"]
    notes = " | ".join(summary["notes"])
    assert "noise.py:14: `variance = variance.clamp_min(1e-4)` made unconditional" in notes
    assert "1 assert(s) now checked on the device" in notes and "loss.py:13" in notes
    assert "argument validation (torch.distributions) is off while the core is captured" in notes
    assert "torch.logical_or(diff.all(), (~diff).all())" in (graphed / "loss.py").read_text(encoding="utf-8")
    before, after = _losses(original, "original"), _losses(graphed, "graphed")
    for (v_a, g_a, w_a), (v_b, g_b, w_b) in zip(before, after):
        assert torch.equal(v_a, v_b) and torch.equal(g_a, g_b) and w_a == w_b == ["variance below 1e-4, clamped"]
