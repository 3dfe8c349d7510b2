"""`fix` and run-time facts: a fix edits a function, so its recorded source hash no longer
matches; the re-check of the fixed file still uses the facts as they held for the text `fix`
started from, and `fix` says which functions' facts are now out of date."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from graphsafe.analyzer import run_facts
from graphsafe.config import Settings
from graphsafe.fixer import fix_paths
from tests.helpers import run_cli as run

# `train_step` has unsafe fixes (the GS201 branch becomes torch.where, the print goes) and a
# GS301 that only the facts decide (`lr` observed to change) and that no fix removes;
# `apply_update` has a GS301 of its own and no fix: `fix` does not edit it.
PROGRAM = '''
import torch


def apply_update(w, grad, lr):
    w.sub_(grad * lr)


def train_step(w, x, sched, lr):  # graphsafe: region
    loss = ((w * x).sum() - 1.0) ** 2
    if sched[0] > 0:
        loss = loss * 2
    w.mul_(1.0 - lr)
    apply_update(w, x, lr)
    print(f"loss {loss}")
    return loss
'''
TENSOR = {"kind": "tensor", "changed": False}
LR = {"kind": "number", "changed": True, "values": ["0.1", "0.05"]}
RERUN = "re-run `graphsafe trace --save-facts`"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = textwrap.dedent(PROGRAM).lstrip()
    (tmp_path / "train.py").write_text(text)
    hashes = run_facts.function_hashes(text)
    functions = {"train_step": {"source_hash": next(iter(hashes["train_step"])), "values": {"sched": TENSOR, "lr": LR}},
                 "apply_update": {"source_hash": next(iter(hashes["apply_update"])), "values": {"lr": LR}}}
    (tmp_path / ".graphsafe").mkdir()
    (tmp_path / ".graphsafe" / "facts.json").write_text(
        json.dumps({"version": 1, "root": "..", "files": {"train.py": {"functions": functions}}}))
    return tmp_path


def test_the_recheck_of_a_fixed_function_keeps_the_facts_it_had(project):
    result = fix_paths([project], Settings(root=project), unsafe=True, write=False, use_cache=False)
    [outcome] = result.outcomes
    assert outcome.error is None and "torch.where" in outcome.fixed
    # the GS301 the facts decide in the edited `train_step` is still reported, on the fixed text
    lines = outcome.fixed.splitlines()
    assert sorted((d.code, lines[d.start.line - 1].strip(), "lr changed 0.1 → 0.05" in d.message)
                  for d in outcome.remaining) == [("GS301", "w.mul_(1.0 - lr)", True), ("GS301", "w.sub_(grad * lr)", True)]
    assert [d.code for d in result.remaining] == ["GS301", "GS301"]


def test_fix_names_the_functions_whose_facts_its_edit_invalidated(project):
    result = fix_paths([project], Settings(root=project), unsafe=True, write=False, use_cache=False)
    [outcome] = result.outcomes
    assert outcome.facts_invalidated == ["train_step"]  # `apply_update` is not edited: its facts still hold
    [message] = outcome.messages()
    assert "train_step" in message and "apply_update" not in message and RERUN in message


def test_a_refused_fix_says_why_and_nothing_about_facts(project):
    result = fix_paths([project], Settings(root=project), unsafe=False, write=False, use_cache=False)
    assert result.outcomes == [] or all(o.messages() == [] for o in result.outcomes)  # only unsafe fixes here


def test_the_fix_command_says_to_trace_again_and_reports_what_the_facts_still_decide(project, capsys):
    code, out, err = run(capsys, "fix", "--unsafe-fixes", "--no-cache", "train.py")
    assert code == 1
    assert "GS301" in out and "(2 fixed, 2 remaining)" in out
    assert f"graphsafe: train.py: the fix edits train_step: the run-time facts recorded for it no longer apply; {RERUN}" in err
    assert "torch.where" in (project / "train.py").read_text()
    # after the write, `check` drops the edited function's facts (its hash changed), as said;
    # the unedited `apply_update` keeps its own
    code, out, _ = run(capsys, "check", "--no-cache", "--output-format", "concise", "train.py")
    assert [line.split(" ")[:2] for line in out.splitlines() if line.startswith("train.py:")] == [["train.py:5:19:", "GS301"]]


def test_the_diff_of_a_fix_carries_the_same_notice(project, capsys):
    code, out, err = run(capsys, "fix", "--unsafe-fixes", "--no-cache", "--diff", "train.py")
    assert "+    loss = torch.where(" in out and RERUN in err
    assert "torch.where" not in (project / "train.py").read_text()


def test_without_a_facts_file_fix_says_nothing_about_facts(project, capsys):
    (project / ".graphsafe" / "facts.json").unlink()
    code, out, err = run(capsys, "fix", "--unsafe-fixes", "--no-cache", "train.py")
    assert RERUN not in err and "(1 fixed, 0 remaining)" in out  # the print; `sched` is Unknown
