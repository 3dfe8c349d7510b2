"""The second walk of a file (returns.refine) reuses the first walk's syntax tree in-process."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from graphsafe.analyzer import engine
from graphsafe.analyzer.engine import check_paths
from graphsafe.analyzer.kept_trees import LARGEST_KEPT, KeptTrees
from graphsafe.config import Settings

SOURCE = "x = f()\n"


def test_second_walk_gets_the_tree_the_first_walk_parsed() -> None:
    kept = KeptTrees()
    first = kept.keeping(0)(SOURCE)
    assert kept.reusing(0)(SOURCE) is first
    assert 0 not in kept  # handed back once: freed when its walk ends


def test_changed_text_is_parsed_again() -> None:
    kept = KeptTrees()
    first = kept.keeping(0)(SOURCE)
    again = kept.reusing(0)("x = g()\n")
    assert again is not first and again.code == "x = g()\n"


def test_parse_sent_to_a_child_process_is_libcsts_parser() -> None:
    import pickle

    kept = KeptTrees()
    kept.keeping(0)(SOURCE)
    for parse in (kept.keeping(1), kept.reusing(0)):
        assert pickle.loads(pickle.dumps(parse)) is cst.parse_module  # the trees stay here


def test_budget_and_large_files_keep_nothing() -> None:
    small = KeptTrees(budget_chars=len(SOURCE) - 1)
    small.keeping(0)(SOURCE)
    roomy = KeptTrees(budget_chars=10 * LARGEST_KEPT)
    roomy.keeping(1)("x = 1\n" * (LARGEST_KEPT // 6 + 1))
    assert 0 not in small and 1 not in roomy


def test_dropped_tree_frees_its_budget() -> None:
    kept = KeptTrees(budget_chars=len(SOURCE))
    kept.keeping(0)(SOURCE)
    kept.drop(0)
    kept.keeping(1)(SOURCE)
    assert 1 in kept


HELPER = """
import torch

def make(n):
    return torch.zeros(n, device="cuda")
"""

STEP = """
import torch
from helper import make

@torch.compile(mode="reduce-overhead")
def step(n):
    buf = make(n)
    return float(buf.sum())
"""


def _check(tmp_path: Path):
    settings = Settings(root=tmp_path)
    return check_paths([tmp_path], settings, jobs=1, use_cache=False)


def test_serial_check_reusing_trees_reports_what_parsing_again_reports(tmp_path, monkeypatch) -> None:
    for name, text in {"helper.py": HELPER, "step.py": STEP}.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    parses: list[str] = []
    real_parse = cst.parse_module
    monkeypatch.setattr(cst, "parse_module", lambda text: parses.append(text) or real_parse(text))
    reusing = _check(tmp_path)
    reused_parses = len(parses)
    monkeypatch.setattr(engine, "KeptTrees", lambda: KeptTrees(budget_chars=0))
    parses.clear()
    parsing_again = _check(tmp_path)
    assert [d.code for d in reusing.diagnostics] == ["GS105"]  # float() of a tensor known only once `make` is resolved
    assert reusing.diagnostics == parsing_again.diagnostics
    assert reusing.facts == parsing_again.facts
    assert reused_parses == 2 and len(parses) == 3  # step.py's second walk parsed nothing
