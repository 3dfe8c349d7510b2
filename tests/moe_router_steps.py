"""The corpus program moe_router run before and after `graphsafe graph`: its model module loaded from a
directory, and training steps compared (outputs, aux loss, input and parameter gradients), with the
inputs and the padding mask changing every step. Shared by the tests of the rewrites that make it
capturable (dense expert dispatch, masked rows)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch


def load_model_module(directory: Path, name: str):
    """`model.py` of one copy of the program, with its sibling `moe.py` (both names are dropped from
    sys.modules around the load, so two copies do not share them)."""
    sys.path.insert(0, str(directory))
    try:
        for stale in ("moe", "model"):
            sys.modules.pop(stale, None)
        spec = importlib.util.spec_from_file_location(f"{name}_model", directory / "model.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(directory))
        for stale in ("moe", "model"):
            sys.modules.pop(stale, None)


def assert_same_training_steps(before, after, steps: int, *, shortest: int = 1, reseed: bool = False) -> None:
    """`steps` forward+backward passes of both models on the same inputs, each with another padding
    (lengths from `shortest` to 6 of 6 frames); `reseed`: the same RNG state before each model's pass
    (a router that draws jitter draws the same numbers in both)."""
    generator = torch.Generator().manual_seed(5)
    for step in range(steps):
        x = torch.randn(4, 6, 12, generator=generator)
        lengths = torch.randint(shortest, 7, (4,), generator=generator)
        mask = torch.arange(6)[None, :] < lengths[:, None]  # padding changes per step
        outs = []
        for model in (before, after):
            model.zero_grad()
            if reseed:
                torch.manual_seed(100 + step)
            xs = x.clone().requires_grad_()
            pred, aux = model(xs, mask)
            (pred.sum() + aux).backward()
            outs.append((pred.detach(), aux.detach(), xs.grad, {n: p.grad for n, p in model.named_parameters()}))
        (p1, a1, g1, w1), (p2, a2, g2, w2) = outs
        torch.testing.assert_close(p2, p1, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(a2, a1, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(g2, g1, rtol=1e-5, atol=1e-6)
        for name, grad in w1.items():
            if grad is None:  # an expert that got no token: eager leaves no gradient, the dense one 0
                assert w2[name] is None or not w2[name].any(), name
            else:
                torch.testing.assert_close(w2[name], grad, rtol=1e-5, atol=1e-6, msg=name)


def model_pair(source: Path, target: Path):
    """The original (`source`) and the `graph` output (`target`) built with the same weights, each
    router's overflow threshold lowered so that some steps count and others do not."""
    original, graphed = load_model_module(source, "original"), load_model_module(target, "graphed")
    torch.manual_seed(0)
    before = original.MoEModel(in_dim=12)
    after = graphed.MoEModel(in_dim=12)
    after.load_state_dict(before.state_dict())
    for model in (before, after):
        for block in model.blocks:
            block.moe.capacity_warn = 1.3  # the busiest expert over 1.3x its fair share: some steps count
    return before, after


def load_source(source: str) -> dict:
    """The namespace a module's source text defines (a rewriter's before and after, run side by side)."""
    namespace: dict = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace
