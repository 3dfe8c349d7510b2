"""The differential harness (graphsafe.runtime.differential): a rewrite that changes what a
statement computes, binds, calls or raises on some input the original accepts is caught; one
that does not change anything is not. The broken hunks are re-creations, in our own words, of
the five "safe" fixes that changed behaviour on real packages, and of the setup-code fixes."""

from __future__ import annotations

import textwrap

import pytest

from graphsafe.config import Settings
from graphsafe.fixer import fix_text
from graphsafe.runtime.differential import compare, reads

BROKEN = {
    "dtype migration into copy_": ("self.k = self.k.to(k.dtype)", "self.k.copy_(self.k.to(k.dtype))"),
    "bool call on a Python flag": (
        "if add_attn_z_loss:\n    loss = loss + cache.attn_z_loss",
        "loss = torch.where(add_attn_z_loss.bool(), loss + cache.attn_z_loss, loss)",
    ),
    "torch.where past the guarded index": (
        "prev_t = torch.tensor(-1) if index == n - 1 else self.timesteps[index + 1]",
        "prev_t = torch.where(index == n - 1, torch.tensor(-1), self.timesteps[index + 1])",
    ),
    "item kept as a tensor in setup": ("self.total = steps.sum().item()", "self.total = steps.sum().detach()"),
    "log line deleted": ("log.info('built with %d layers', n)\nself.n = n", "self.n = n"),
    "print deleted": ("print(f'loss {loss}')\ny = loss * 2", "y = loss * 2"),
}

SAME = {
    "commuted product": ("y = x * 2", "y = 2 * x"),
    "where on one shape and dtype": (
        "y = torch.where(mask, a, b)",
        "y = a * mask + b * ~mask if False else torch.where(mask, a, b)",
    ),
    "checkpoint without rng state, no randomness inside": (
        "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x, use_reentrant=False)",
        "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x, use_reentrant=False, preserve_rng_state=False)",
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_rewrite_that_changes_behaviour_is_caught(name):
    before, after = BROKEN[name]
    verdict = compare(before, after)
    assert verdict.changed and verdict.accepted > 0, verdict


@pytest.mark.parametrize("name", sorted(SAME))
def test_a_rewrite_that_keeps_behaviour_is_not_flagged(name):
    before, after = SAME[name]
    verdict = compare(before, after)
    assert not verdict.changed and verdict.accepted > 0, verdict


def test_inputs_are_the_names_and_attribute_paths_read_and_called_things_are_recorded():
    values, called = reads("self.k = self.k.to(k.dtype)\nlog.info(x.shape, cfg.a.b)\ny = [v for v in xs]")
    assert values == [("cfg", "a", "b"), ("k",), ("self", "k"), ("x",), ("xs",)]
    assert called == [("log", "info")]


REGION_CASES = [
    """
    def step(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
        if x.sum() > 0:
            z = x * 2
        else:
            z = y - 1
        return z
    """,
    """
    class KVCache(torch.nn.Module):
        def __init__(self, n: int, d: int):
            super().__init__()
            self.k = torch.zeros(n, d)

        def update(self, k: torch.Tensor):  # graphsafe: region
            self.k = self.k[:1] + k  # one row now: `.copy_()` would broadcast it over all n
            return self.k.sum()
    """,
    """
    def step(x: torch.Tensor, log):  # graphsafe: region
        loss = (x * 2).sum()
        log.append(loss.item())
        return loss
    """,
]


@pytest.mark.parametrize("source", REGION_CASES)
def test_what_fix_applies_by_default_keeps_behaviour_and_its_unsafe_fixes_are_marked(source):
    """Every edit `fix` makes on these regions: the safe run must leave them unchanged or
    unchanged in behaviour; each unsafe hunk the harness can run is checked and reported."""
    text = "import torch\n" + textwrap.dedent(source)
    safe = fix_text(text, "case.py", Settings(), [], unsafe=False)
    unsafe = fix_text(text, "case.py", Settings(), [], unsafe=True)
    assert safe.error is None and unsafe.error is None
    if safe.fixed != text:
        assert not compare(text, safe.fixed).changed
    assert unsafe.fixed != text  # each case has an unsafe fix: the harness sees it change something
    assert compare(_body(text), _body(unsafe.fixed)).changed


def _body(module_text: str) -> str:
    """The statements of the module's last function, for running on generated inputs."""
    lines = module_text.rstrip().splitlines()
    start = max(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
    return textwrap.dedent("\n".join(lines[start + 1:]))
