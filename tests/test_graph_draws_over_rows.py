"""`graphsafe graph` on a random draw over the rows a boolean mask selects (drawn_rows.py,
draw_order.py): the region's wrapper draws eager's numbers before the graphed core, in eager's call
order, into a full-row buffer the core reads. Differential tests on CPU over several training
steps, the inputs and the padding changing, jitter on, the same random state on both sides."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.moe_router_steps import load_model_module, model_pair

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
JITTER = "x = x * torch.empty_like(x).uniform_(1.0 - self.jitter, 1.0 + self.jitter)"


def _graphed(tmp_path: Path, edit=None):
    from graphsafe.config import Settings
    from graphsafe.graph_command import plan

    source = tmp_path / "source"
    shutil.copytree(CORPUS / "moe_router", source)
    if edit is not None:
        edit(source)
    target = tmp_path / "graphed"
    shutil.copytree(source, target)
    result = plan([target], Settings(root=target), "MoEModel.forward", use_cache=False)
    for path, (_old, new) in result.changed.items():
        Path(path).write_bytes(new)
    return source, target, result


def _steps(before, after, steps: int = 5, same_random: bool = True) -> list[str]:
    """The differences between the two models' outputs, aux, gradients over `steps` training steps."""
    differences = []
    generator = torch.Generator().manual_seed(5)
    for step in range(steps):
        x = torch.randn(4, 6, 12, generator=generator)
        lengths = torch.randint(1, 7, (4,), generator=generator)
        mask = torch.arange(6)[None, :] < lengths[:, None]  # padding changes per step
        state = torch.get_rng_state()
        outs = []
        for model in (before, after):
            torch.set_rng_state(state if same_random or model is before else torch.manual_seed(99 + step).get_state())
            model.zero_grad()
            xs = x.clone().requires_grad_()
            pred, aux = model(xs, mask)
            (pred.sum() + aux).backward()
            outs.append((pred.detach(), aux.detach(), xs.grad, {n: p.grad for n, p in model.named_parameters()}))
        (p1, a1, g1, w1), (p2, a2, g2, w2) = outs
        pairs = [("pred", p1, p2), ("aux", a1, a2), ("input grad", g1, g2)]
        pairs += [(n, w1[n], w2[n]) for n in w1 if w1[n] is not None or (w2[n] is not None and w2[n].any())]
        for name, a, b in pairs:
            if a is None or b is None or not torch.allclose(a, b, rtol=1e-5, atol=1e-6):
                differences.append(f"step {step} {name}")
    return differences


def test_graph_draws_the_jitter_over_the_selected_rows_in_the_wrapper_and_computes_the_same(tmp_path):
    source, target, result = _graphed(tmp_path)
    assert not result.blocking and result.callee_refusals == [], (result.blocking, result.callee_refusals)
    assert result.core == "MoEModel.forward_core"
    assert "obj.forward_core = graphed(obj.forward_core)" in result.wiring
    before, after = model_pair(source, target)
    assert before.training and before.blocks[0].moe.router.jitter > 0
    assert _steps(before, after, steps=5) == []
    counts = [int(b.moe.overflow_events) for b in after.blocks]
    assert counts == [b.moe.overflow_events for b in before.blocks]
    # the core read the wrapper's draw: ones on the padding rows, eager's numbers on the others
    router = after.blocks[1].moe.router
    assert router._graphsafe_draw is not None
    assert (router._graphsafe_draw != 1.0).any(dim=1).sum() > 0


def test_the_jitter_matters_so_other_random_numbers_are_seen_as_differing(tmp_path):
    source, target, _ = _graphed(tmp_path)
    before, after = model_pair(source, target)
    assert any("pred" in d for d in _steps(before, after, steps=2, same_random=False))


def test_the_core_draws_nothing_itself_with_a_mask(tmp_path):
    """The graphed core consumes no random numbers: a draw of a count the mask decides stays outside."""
    _, target, _ = _graphed(tmp_path)
    model = load_model_module(target, "graphed").MoEModel(in_dim=12)
    x, mask = torch.randn(2, 6, 12), torch.arange(6)[None, :] < torch.tensor([[3], [5]])
    model._graphsafe_draws(mask)
    state = torch.get_rng_state()
    model.forward_core(x, mask)
    assert torch.equal(torch.get_rng_state(), state)


def test_without_a_mask_eager_draws_on_every_row_and_so_does_the_core(tmp_path):
    source, target, _ = _graphed(tmp_path)
    before, after = model_pair(source, target)
    x = torch.randn(2, 6, 12)
    state = torch.get_rng_state()
    expected = before(x)[0]
    torch.set_rng_state(state)
    torch.testing.assert_close(after(x)[0], expected, rtol=1e-5, atol=1e-6)


def _dropout_in_block(source: Path) -> None:
    model = source / "model.py"
    text = model.read_text()
    text = text.replace("        self.mix = nn.Linear(dim, dim)\n",
                        "        self.mix = nn.Linear(dim, dim)\n        self.drop = nn.Dropout(0.1)\n")
    text = text.replace("x = x + self.mix(self.norm1(x))", "x = x + self.drop(self.mix(self.norm1(x)))")
    model.write_text(text)


def test_another_random_draw_on_the_way_keeps_the_jitter_listed_with_its_line(tmp_path):
    """Dropout between two routers' draws: the wrapper could not draw in eager's order."""
    _, target, result = _graphed(tmp_path, _dropout_in_block)
    line = next(i for i, row in enumerate((target / "moe.py").read_text().splitlines(), 1) if JITTER in row)
    assert any(f"moe.py:{line}: a random draw over the selected rows" in r for r in result.callee_refusals), \
        result.callee_refusals
    assert any("not drawn by the wrapper" in r and "model.py:" in r and "Dropout" in r
               for r in result.callee_refusals), \
        result.callee_refusals
    assert result.core == "MoEModel.forward"
    assert "_graphsafe_draw" not in (target / "moe.py").read_text()


# a scorer that jitters the rows it got (its Linear proves their width), picked and put back by Pooler
JITTERED = '''\
import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.noise = 0.1

    def forward(self, h):
        if self.training and self.noise > 0:
            h = h * torch.empty_like(h).uniform_(1.0 - self.noise, 1.0 + self.noise)
        return self.proj(h)


class Pooler(nn.Module):
    def __init__(self, dim: int = 5):
        super().__init__()
        self.scorer = Scorer(dim)

    def forward(self, x, valid=None):
        b, t, d = x.shape
        flat = x.view(-1, d)
        pick = valid.reshape(-1) if valid is not None else None
        h = flat[pick] if pick is not None else flat
        out = self.scorer(h)
        if pick is not None:
            full = torch.zeros_like(flat)
            full[pick] = out
            out = full
        return out.view(b, t, d)
'''


def _rows_lines(source: str) -> set[int]:
    return {i for i, row in enumerate(source.splitlines(), 1) if "[pick] if" in row or "full[pick] =" in row}


def test_a_draw_over_the_selected_rows_becomes_a_buffer_and_a_draw_method():
    from graphsafe.rewriters.masked_rows import masked_rows, masked_rows_and_draws

    new, _, refused, drawers = masked_rows_and_draws(JITTERED, _rows_lines(JITTERED))
    assert refused == [] and drawers == [("Pooler", ["valid"])], refused
    assert "h * (torch.empty_like(h).uniform_" in new and "else self._graphsafe_draw)" in new
    assert "def _graphsafe_draw_rows(self, rows):" in new and "self.scorer._graphsafe_draw_rows(pick)" in new
    # without the wrapper the draw is refused, as before
    assert masked_rows(JITTERED, _rows_lines(JITTERED))[0] is None
    namespace: dict = {}
    exec(compile(JITTERED, "<original>", "exec"), namespace)
    rewritten: dict = {}
    exec(compile(new, "<rewritten>", "exec"), rewritten)
    torch.manual_seed(0)
    before = namespace["Pooler"]()
    after = rewritten["Pooler"]()
    after.load_state_dict(before.state_dict())
    generator = torch.Generator().manual_seed(3)
    for step in range(4):
        x = torch.randn(3, 7, 5, generator=generator)
        valid = torch.arange(7)[None, :] < torch.randint(1, 8, (3, 1), generator=generator)
        state = torch.get_rng_state()
        expected = before(x, valid)
        torch.set_rng_state(state)
        after._graphsafe_draws(valid)  # the wrapper's part
        torch.testing.assert_close(after(x, valid), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("old, new, reason", [
    ("if self.training and self.noise > 0:", "if h.sum() > 0:", "condition"),
    ("return self.proj(h)", "return self.proj(h.relu()) + h", "width"),
    ("return self.proj(h)", "return self.proj(h) * torch.rand_like(h)", "another random call"),
    ("h = h * torch.empty_like(h).uniform_", "h = h + torch.randn(h.shape).uniform_", "a draw other than"),
])
def test_a_draw_whose_shape_or_order_is_not_proven_is_refused_with_the_reason(old, new, reason):
    from graphsafe.rewriters.masked_rows import masked_rows_and_draws

    source = JITTERED.replace(old, new)
    assert source != JITTERED
    result, _, refused, drawers = masked_rows_and_draws(source, _rows_lines(source))
    assert result is None and drawers == [] and len(refused) == 1 and reason in refused[0], refused
