"""The walker's pre-filters (Rule.calls, Rule.words) change nothing but speed: every rule's
examples, the corpus and a slice of the installed torch tree give the same facts with them
on and off (hits, positions, fixes, calls, wanted ids)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from graphsafe.analyzer.parsing import analyze_text
from graphsafe.analyzer.walker import FileWalker
from graphsafe.rules import CHECK_RULES
from graphsafe.rules.base import Callees, as_example

pytestmark = pytest.mark.slow  # analyses every corpus program and torch files twice

ROOT = Path(__file__).resolve().parent.parent

# callee spellings a name filter must not miss: aliases, re-exports, methods of results
ALIASED = '''\
import torch
import numpy.random as npr
from torch import equal as same, nonzero as nz
from torch.cuda import synchronize as sync, empty_cache as free
from torch.utils.checkpoint import checkpoint as ckpt
from logging import info as say
from random import random as draw
import shutil as sh
from tqdm import tqdm as bar
from mlflow import log_metric as lm

class M(torch.nn.Module):
    def __init__(self):
        self.gen = torch.Generator(device="cuda")

    def forward(self, x: torch.Tensor, b: torch.Tensor):  # graphsafe: region
        if same(x, b):
            pass
        idx = nz(x)
        sync()
        free()
        y = ckpt(self.block, x)
        say("step")
        p = draw() + npr.rand()
        sh.copy("a", "b")
        for _ in bar(range(3)):
            pass
        lm("loss", 1.0)
        d = torch.distributions.Normal(x, b)
        z = torch.randn(4, generator=self.gen, pin_memory=True)
        return y.item() + p
'''


def _facts(text: str, path: str, module: str, prefilter: bool, monkeypatch) -> str:
    monkeypatch.setattr(FileWalker, "prefilter", prefilter)
    return repr(analyze_text(path, module, False, text, CHECK_RULES))


def _sources():
    yield "aliased.py", ALIASED
    for rule in CHECK_RULES:
        for i, example in enumerate((*rule.valid, *rule.invalid)):
            yield f"{rule.code}_{i}.py", as_example(example).code
    for path in sorted((ROOT / "corpus").rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def test_same_facts_with_and_without_prefilters(monkeypatch):
    compared = 0
    for path, text in _sources():
        on = _facts(text, path, "m", True, monkeypatch)
        off = _facts(text, path, "m", False, monkeypatch)
        assert on == off, path
        compared += 1
    assert compared > 300


def test_aliased_callees_are_still_reported():
    facts = analyze_text("aliased.py", "m", False, ALIASED, CHECK_RULES)
    found = {(hit.code, hit.start.line) for unit in facts.units for hit in unit.hits}
    assert found == {
        ("GS109", 17), ("GS107", 19), ("GS106", 20), ("GS405", 21), ("GS603", 22), ("GS501", 23),
        ("GS502", 24), ("GS504", 25), ("GS505", 26), ("GS501", 28), ("GS111", 29), ("GS406", 30),
        ("GS601", 30), ("GS101", 31),
    }


def test_callees_match_method_bare_and_resolved_names():
    callees = Callees({"item"}, prefixes=("torch.cuda.",))
    assert callees.match("item", None)  # x.item()
    assert callees.match("it", "torch.Tensor.item")  # `it = torch.Tensor.item` imported
    assert callees.match("free", "torch.cuda.empty_cache")  # by prefix
    assert not callees.match("items", "d.items")
    assert not callees.match(None, None)
    seeded = Callees({"register_generator_state"}, keywords=("generator",))
    assert seeded.match("randn", "torch.randn", keywords=("generator",))  # `torch.randn(4, generator=g)`
    assert not seeded.match("randn", "torch.randn", keywords=("device",))


_TORCH = importlib.util.find_spec("torch")


@pytest.mark.skipif(_TORCH is None or not _TORCH.origin, reason="torch is not installed")
def test_same_facts_on_torch_files(monkeypatch):
    base = Path(_TORCH.origin).parent
    files = [base / "_tensor.py", *sorted((base / "optim").glob("*.py"))[:12],
             *sorted((base / "nn" / "modules").glob("*.py"))[:12]]
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert _facts(text, str(path), "torch.x", True, monkeypatch) == _facts(text, str(path), "torch.x", False, monkeypatch), path
