"""What `graphsafe graph` rewrites for a boolean-mask selection of rows scattered back (masked_rows):
every row runs, the result and the reductions over the selected rows are masked. Differential
tests on CPU, original vs rewritten, over several steps with the inputs and the masks changing;
gradients too."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from graphsafe.rewriters.masked_rows import masked_rows
from tests.moe_router_steps import assert_same_training_steps, load_source, model_pair

torch = pytest.importorskip("torch")

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def _lines(source: str, *texts: str) -> set[int]:
    return {i for i, row in enumerate(source.splitlines(), 1) for text in texts if text in row}


# valid frames picked, a scorer whose statistics average over them, the frames put back
POOLER = textwrap.dedent('''\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Scorer(nn.Module):
        def __init__(self, dim: int, classes: int):
            super().__init__()
            self.proj = nn.Linear(dim, classes)
            self.norm = nn.LayerNorm(dim)

        def forward(self, h):
            z = self.proj(F.gelu(self.norm(h)))
            p = F.softmax(z, dim=-1)
            score, best = torch.topk(p, 1, dim=-1)
            hist = F.one_hot(best[:, 0]).float()
            balance = (hist.mean(0) * p[:, : hist.shape[1]].mean(0)).sum()
            spread = (z - z.mean(dim=0, keepdim=True)).pow(2).sum(0) / h.shape[0]
            ok = torch.isfinite(z).all()
            return score * z, balance + spread.sum() + ok.float()


    class Pooler(nn.Module):
        def __init__(self, dim: int = 5, classes: int = 4):
            super().__init__()
            self.scorer = Scorer(dim, classes)
            self.back = nn.Linear(classes, dim)

        def forward(self, x, valid=None):
            b, t, d = x.shape
            flat = x.view(-1, d)
            pick = valid.reshape(-1) if valid is not None else None
            h = flat[pick] if pick is not None else flat
            s, stat = self.scorer(h)
            out = self.back(s) * (1.0 + h.size(0))
            if pick is not None:
                full = torch.zeros_like(flat)
                full[pick] = out
                out = full
            return out.view(b, t, d), stat
''')


def _rewritten(source: str) -> str:
    new, done, refused = masked_rows(source, _lines(source, "[pick] if", "full[pick] ="))
    assert new is not None, refused
    assert done == sorted(_lines(source, "[pick] if", "full[pick] ="))
    assert new.count("\n") == source.count("\n")
    return new


def _same_steps(before_cls, after_cls, steps: int = 5):
    torch.manual_seed(0)
    before = before_cls()
    after = after_cls()
    after.load_state_dict(before.state_dict())
    generator = torch.Generator().manual_seed(4)
    for step in range(steps):
        x = torch.randn(3, 7, 5, generator=generator)
        lengths = torch.randint(1, 8, (3,), generator=generator)
        valid = torch.arange(7)[None, :] < lengths[:, None] if step != 2 else None  # padding changes; once none
        results = []
        for model in (before, after):
            model.zero_grad()
            xs = x.clone().requires_grad_()
            out, stat = model(xs, valid)
            (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().add(stat).backward()
            results.append((out.detach(), stat.detach(), xs.grad, [p.grad for p in model.parameters()]))
        (o1, s1, g1, w1), (o2, s2, g2, w2) = results
        torch.testing.assert_close(o2, o1, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(s2, s1, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(g2, g1, rtol=1e-5, atol=1e-6)
        for a, b in zip(w2, w1):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_selected_rows_run_on_every_row_with_masked_reductions_and_give_the_same_results_and_gradients():
    new = _rewritten(POOLER)
    assert "[pick] if" not in new and "full[pick] =" not in new
    assert "self.scorer(h, rows)" in new and "num_classes=p.shape[-1]" in new
    _same_steps(load_source(POOLER)["Pooler"], load_source(new)["Pooler"])


def test_the_rewrite_does_not_read_the_mask_on_the_host():
    """No op whose result's shape depends on the mask's values: the same shapes whatever the mask."""
    model = load_source(_rewritten(POOLER))["Pooler"]()
    shapes = []
    for n in (1, 9, 21):
        valid = (torch.arange(21) < n).view(3, 7)
        out, stat = model(torch.randn(3, 7, 5), valid)
        shapes.append((out.shape, stat.shape))
    assert len(set(shapes)) == 1


def _refusal(old: str, new: str) -> list[str]:
    source = POOLER.replace(old, new)
    assert source != POOLER
    result, done, refused = masked_rows(source, _lines(source, "[pick] if", "full[pick] ="))
    assert result is None and done == []
    return refused


@pytest.mark.parametrize("old, new, reason", [
    ("s, stat = self.scorer(h)", "s, stat = self.scorer(h * torch.rand_like(h))", "random draw"),
    ("z = self.proj(F.gelu(self.norm(h)))",
     "z = self.proj(F.gelu(self.norm(h))) * torch.empty_like(h[:, :1]).uniform_()", "random draw"),
    ("out = self.back(s) * (1.0 + h.size(0))", "out = self.back(s) * torch.cumsum(s, 0)[:, :1]", "cumsum"),
    ("ok = torch.isfinite(z).all()", "ok = (h.T @ h).sum()", "`@`"),
    ("return out.view(b, t, d), stat", "return out.view(b, t, d), stat + s.sum()", "read after the scatter"),
    ("balance = (hist.mean(0)", "balance = hist.sum() + (hist.mean(0)", "one_hot"),
    ("    def forward(self, x, valid=None):", "    def peek(self, h):\n        return self.scorer(h)\n\n"
     "    def forward(self, x, valid=None):", "outside the function"),  # would be called without the mask
])
def test_work_that_is_not_row_by_row_is_refused_with_the_reason(old, new, reason):
    refused = _refusal(old, new)
    assert len(refused) == 1 and reason in refused[0], refused
    line = int(refused[0].split(":")[0])
    assert 0 < line <= POOLER.replace(old, new).count("\n")


def test_selection_not_scattered_back_is_refused():
    source = POOLER.replace("full[pick] = out", "full = full + 1")
    result, _, refused = masked_rows(source, _lines(source, "[pick] if"))
    assert result is None and len(refused) == 1, refused


JITTER = "x = x * torch.empty_like(x).uniform_(1.0 - self.jitter, 1.0 + self.jitter)"


@pytest.mark.slow
def test_graph_on_moe_router_without_jitter_leaves_nothing_blocking_and_computes_the_same(tmp_path):
    """moe_router with its jitter draw taken out (the draw itself: see the refusal test below)."""
    from graphsafe.config import Settings
    from graphsafe.graph_command import plan

    source = tmp_path / "source"
    shutil.copytree(CORPUS / "moe_router", source)
    moe = source / "moe.py"
    assert JITTER in moe.read_text()
    moe.write_text(moe.read_text().replace(JITTER, "x = x * 1.0"))
    target = tmp_path / "graphed"
    shutil.copytree(source, target)
    result = plan([target], Settings(root=target), "MoEModel.forward", use_cache=False)
    for path, (_old, new) in result.changed.items():
        Path(path).write_bytes(new)
    assert not result.blocking, result.blocking
    before, after = model_pair(source, target)
    assert_same_training_steps(before, after, 5)
    counts = [int(b.moe.overflow_events) for b in after.blocks]
    assert counts == [b.moe.overflow_events for b in before.blocks]
    assert any(0 < c < 5 for c in counts), counts
