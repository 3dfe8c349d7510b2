"""Differential tests on CUDA for fixes that only run there: the fixed programs capture a real
graph and their replays give the eager results. Skipped without a GPU.

- GS401 `.copy_()` and GS407 `.clone()`: replays of the fixed program equal the eager loop
  bitwise (same kernels); the unfixed program's results are stale (checked too, so the test
  can tell the fix did something).
- GS701 `capturable=True`: the fixed optimizer captures, and its replayed steps match the
  eager non-capturable AdamW within rtol 1e-5 / atol 1e-6 (a different kernel path).
- GS702 `cache_enabled=False`: results under autocast are bitwise equal to the eager ones.
"""

from __future__ import annotations

import textwrap

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]

from graphsafe.config import Settings
from graphsafe.fixer import fix_text


def fixed_and_original(source: str, unsafe: bool):
    text = "import torch\n" + textwrap.dedent(source)
    outcome = fix_text(text, "case.py", Settings(), [], unsafe=unsafe)
    assert outcome.error is None and outcome.fixed != text
    return _load(text), _load(outcome.fixed), outcome.fixed


def _load(source: str):
    namespace: dict = {}
    exec(compile(source, "case.py", "exec"), namespace)
    return namespace["main"]


def _batches(n=4, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    data = [torch.randn(8, 16, device="cuda", generator=g) for _ in range(n)]
    data[1][0, 0] = float("inf")
    data[2][1, 1] = float("nan")
    return data


def _equal(a, b):
    return torch.equal(a.nan_to_num(7.0, 8.0, 9.0), b.nan_to_num(7.0, 8.0, 9.0)) and torch.equal(a.isnan(), b.isnan())


def test_copy_and_clone_fixes_make_replays_equal_the_eager_loop():
    source = """
        def main(w: torch.Tensor, loader):
            static_x = torch.zeros(8, 16, device="cuda")
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    out = torch.tanh(static_x @ w)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = torch.tanh(static_x @ w)
            outs = []
            for batch in loader:
                static_x = batch.clone()
                g.replay()
                outs.append(out)
            return outs
    """
    # GS401's .copy_() fix is unsafe (a later read of the name sees the static buffer): --unsafe-fixes
    original, fixed, text = fixed_and_original(source, unsafe=True)
    assert "static_x.copy_(batch.clone())" in text and "outs.append(out.clone())" in text
    w = torch.randn(16, 16, device="cuda")
    loader = _batches()
    eager = [torch.tanh(b @ w) for b in loader]
    got = fixed(w, loader)
    torch.cuda.synchronize()
    assert all(_equal(a, b) for a, b in zip(eager, got))
    stale = original(w, loader)
    torch.cuda.synchronize()
    assert not all(_equal(a, b) for a, b in zip(eager, stale))


def test_capturable_fix_lets_adamw_capture_and_match_eager_steps():
    source = """
        def main(model, xs):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
            static_x = xs[0].clone()

            def step():
                opt.zero_grad(set_to_none=False)
                loss = model(static_x).square().mean()
                loss.backward()
                opt.step()
                return loss

            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    step()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_loss = step()
            for x in xs:
                static_x.copy_(x)
                g.replay()
            return [p.detach().clone() for p in model.parameters()]
    """
    original, fixed, text = fixed_and_original(source, unsafe=True)
    assert "capturable=True" in text
    xs = [torch.randn(8, 16, device="cuda") for _ in range(4)]

    def model():
        torch.manual_seed(0)
        return torch.nn.Linear(16, 4).cuda()

    ref_model = model()
    ref = torch.optim.AdamW(ref_model.parameters(), lr=1e-2)
    for x in [xs[0]] * 3 + xs:  # 3 warm-up steps (capturing runs no kernel), then one per replay
        ref.zero_grad(set_to_none=False)
        ref_model(x).square().mean().backward()
        ref.step()
    got = fixed(model(), xs)
    for a, b in zip(ref_model.parameters(), got):
        torch.testing.assert_close(b, a.detach(), rtol=1e-5, atol=1e-6)
    with pytest.raises(Exception):  # noqa: B017 - whatever capture raises for the non-capturable optimizer
        original(model(), xs)


def test_cache_enabled_fix_keeps_autocast_results():
    source = """
        def main(w: torch.Tensor, xs):
            static_x = xs[0].clone()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    y = static_x @ w
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = static_x @ w
            outs = []
            for x in xs:
                static_x.copy_(x)
                g.replay()
                outs.append(y.clone())
            return outs
    """
    _, fixed, text = fixed_and_original(source, unsafe=False)
    assert "cache_enabled=False" in text
    w = torch.randn(16, 16, device="cuda")
    xs = _batches()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        eager = [x @ w for x in xs]
    got = fixed(w, xs)
    torch.cuda.synchronize()
    assert all(_equal(a, b) for a, b in zip(eager, got))
