"""Safe means safe: the fixes `graphsafe fix` applies by default never change what a program
computes or raises. Each case re-creates (in our own words) a hunk that an earlier version
applied as safe on a real package and that broke it, runs the original and whatever `fix`
produces now, and compares results and raised exceptions.
"""

from __future__ import annotations

import textwrap

import pytest
import torch

from graphsafe.config import Settings
from graphsafe.fixer import fix_text
from tests.helpers import diagnostics


def fixed(source: str, unsafe: bool = False, **settings) -> tuple[str, str]:
    original = textwrap.dedent(source)
    outcome = fix_text(original, "case.py", Settings(**settings), [], unsafe=unsafe)
    assert outcome.error is None, outcome.error
    return original, outcome.fixed


def namespace(source: str) -> dict:
    names: dict = {}
    exec(compile(source, "case.py", "exec"), names)
    return names


def outcome(call):
    """What a call returns or raises, comparable across the two versions."""
    try:
        return ("value", call())
    except Exception as error:  # noqa: BLE001 - the exception type is the behaviour compared
        return ("raises", type(error).__name__)


def same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "raises":
        return a[1] == b[1]
    x, y = a[1], b[1]
    if isinstance(x, torch.Tensor):
        return isinstance(y, torch.Tensor) and x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)
    return x == y


KV_CACHE = """
import torch


class KVCache(torch.nn.Module):
    def __init__(self, n: int, d: int):
        super().__init__()
        self.k = torch.zeros(n, d)

    def update(self, pos: torch.Tensor, k: torch.Tensor):  # graphsafe: region
        self.k = self.k.to(k.dtype)  # a one-time dtype migration
        self.k.index_copy_(0, pos, k)
        return self.k.sum()
"""


def test_a_kv_cache_dtype_migration_keeps_its_behaviour():
    original, safe = fixed(KV_CACHE)
    assert [d.code for d in diagnostics(KV_CACHE)] == ["GS401"]  # still reported
    for source in (original, safe):
        cache = namespace(source)["KVCache"](4, 3)
        got = outcome(lambda: cache.update(torch.tensor([1]), torch.ones(1, 3, dtype=torch.float64)))
        assert got[0] == "value" and got[1].dtype == torch.float64, source
    assert safe == original


def test_the_copy_fix_is_not_offered_for_the_migration_even_as_unsafe():
    # `self.k.copy_(self.k.to(k.dtype))` keeps the float32 buffer: the next index_copy_ of float64
    # rows raises (RuntimeError: self and source dtypes differ), so no fix is offered at all
    _, unsafe = fixed(KV_CACHE, unsafe=True)
    assert "copy_(" not in unsafe.replace("index_copy_(", "")
    [copy] = [d for d in diagnostics(KV_CACHE) if d.code == "GS401"]
    assert copy.fix is None


KV_RUNNING = KV_CACHE.replace("self.k = self.k.to(k.dtype)  # a one-time dtype migration",
                              "self.k = self.k * 0.9  # a decayed cache")


FLAG_FROM_UNPACKING = [
    """
    import torch


    def step(x: torch.Tensor, cache, out):  # graphsafe: region
        loss = x.sum()
        y, add_attn_z_loss = out
        if add_attn_z_loss:
            loss = loss + cache.attn_z_loss
        return loss
    """,
    """
    import torch


    def step(x: torch.Tensor, cache, out):  # graphsafe: region
        loss = x.sum()
        (b, t), add_attn_z_loss = x.shape, cache.flag
        if add_attn_z_loss:
            loss = loss + cache.attn_z_loss
        return loss
    """,
]


class Cache:
    flag = True
    attn_z_loss = torch.tensor(0.5)


@pytest.mark.parametrize("source", FLAG_FROM_UNPACKING)
@pytest.mark.parametrize("unsafe", [False, True])
def test_a_python_bool_unpacked_beside_a_tensor_gets_no_bool_call(source, unsafe):
    original, result = fixed(source, unsafe=unsafe)
    assert ".bool()" not in result
    for flag in (True, False):
        x = torch.ones(2, 3)
        before = outcome(lambda: namespace(original)["step"](x, Cache(), (x, flag)))
        after = outcome(lambda: namespace(result)["step"](x, Cache(), (x, flag)))
        assert same(before, after)


GUARDED_INDEX = """
import torch


class Scheduler:
    def __init__(self, n: int):
        self.timesteps = torch.arange(n)
        self.n = n

    def previous(self, index: torch.Tensor):  # graphsafe: region
        n = self.n
        prev_t = torch.tensor(-1) if index == n - 1 else self.timesteps[index + 1]
        return prev_t
"""


@pytest.mark.parametrize("unsafe", [False, True])
def test_a_ternary_guarding_an_index_is_not_turned_into_torch_where(unsafe):
    original, result = fixed(GUARDED_INDEX, unsafe=unsafe)
    assert "torch.where" not in result
    for last in (False, True):
        index = torch.tensor(4 if last else 1)
        before = outcome(lambda: namespace(original)["Scheduler"](5).previous(index))
        after = outcome(lambda: namespace(result)["Scheduler"](5).previous(index))
        assert same(before, after)


def test_the_where_fix_is_never_applied_without_unsafe_fixes():
    source = """
    import torch


    def f(x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
        if x.sum() > 0:
            z = x * 2
        else:
            z = y - 1
        return z
    """
    original, safe = fixed(source)
    assert safe == original
    assert "torch.where" in fixed(source, unsafe=True)[1]


SETUP = """
import torch


class Trainer:
    def __init__(self, model, steps: torch.Tensor):
        self.model = model
        self.total = steps.sum().item()
        self.opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(self, x: torch.Tensor):
        loss = self.model(x).sum()
        loss.backward()
        self.opt.step()
        return loss
"""


def test_an_audit_of_every_function_reports_but_fixes_nothing():
    found = diagnostics(SETUP, regions=("*",))
    assert found and all(d.fix is None for d in found)
    original, result = fixed(SETUP, unsafe=True, regions=("*",))
    assert result == original


def test_a_constructor_named_by_a_pattern_gets_no_fix_but_a_named_step_does():
    found = diagnostics(SETUP, regions=("Trainer.*",))
    in_init = [d for d in found if d.start.line in (7, 8)]
    assert in_init and all(d.fix is None for d in in_init)
    step = [d for d in diagnostics(SETUP, regions=("Trainer.step",)) if d.code == "GS701"]
    assert step and step[0].fix is not None


def test_an_audit_keeps_fixes_of_regions_also_named_explicitly():
    found = [d for d in diagnostics(SETUP, regions=("*", "Trainer.step")) if d.code == "GS701"]
    assert found and found[0].fix is not None


def test_a_withheld_fix_says_why_in_the_text_output_and_in_the_editor():
    from graphsafe.lsp.convert import to_diagnostic
    from graphsafe.report.formats import format_text

    found = [d for d in diagnostics(GUARDED_INDEX) if d.code == "GS201"]
    assert found and not found[0].fix.offered
    assert "help: no fix offered: an arm indexes" in format_text(found)
    lsp = to_diagnostic(found[0], GUARDED_INDEX.splitlines(), "utf-16", lambda path: None)
    assert "(no fix offered: an arm indexes" in lsp.message


def test_an_unsafe_fix_says_why_it_is_unsafe_in_the_text_output_and_the_quick_fix_title():
    from graphsafe.lsp.actions import fix_title
    from graphsafe.report.formats import format_text

    [copy] = [d for d in diagnostics(KV_RUNNING) if d.code == "GS401"]
    assert "(unsafe: the new value may differ in shape, dtype or device" in format_text([copy])
    assert fix_title(copy).startswith("(unsafe) Copy into `self.k`") and "shape, dtype or device" in fix_title(copy)


def test_every_unsafe_fix_in_the_rule_examples_says_why():
    from graphsafe.rules import ALL_RULES
    from graphsafe.rules.base import as_example
    from tests.helpers import wrap

    seen = 0
    for rule in ALL_RULES:
        for example in map(as_example, rule.invalid):
            for d in diagnostics(wrap(example)):
                if d.fix is not None and d.fix.applicability.value == "unsafe":
                    seen += 1
                    assert d.fix.reason, f"{d.code}: {d.fix.title}"
    assert seen >= 10
