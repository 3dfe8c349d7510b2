"""`graphsafe graph` with run-time facts: the calls the traced region function made (through an
attribute the static call graph cannot follow, as pyro's `self.loss_and_grads`) are the core's
after the split, so what they reach still blocks capture; a callee named only in the wrapper's
host work stays the wrapper's (graphsafe/core_facts.py)."""

from __future__ import annotations

import json
import textwrap

from graphsafe.analyzer import run_facts
from tests.helpers import run_cli

LOSS = textwrap.dedent('''\
    import torch


    def as_number(x):
        return x.item()


    class Loss:
        def compute(self, x):
            total = 0.0
            total += (x * 2).sum().item()
            return total
''')

TRAIN = textwrap.dedent('''\
    import logging

    import torch

    from loss import as_number

    log = logging.getLogger(__name__)


    class Trainer:
        def __init__(self, loss):
            self.compute = loss.compute  # bound at run time: the static call graph does not follow it

        def step(self, x):
            value = self.compute(x * 3)
            log.info("loss %s", as_number(torch.ones(())))
            return value
''')


def _project(tmp_path, with_facts: bool):
    (tmp_path / "loss.py").write_text(LOSS, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    if with_facts:
        digest = next(iter(run_facts.function_hashes(TRAIN)["Trainer.step"]))
        step = {"source_hash": digest, "line": 14, "values": {},
                "calls": ["loss.py::Loss.compute", "loss.py::as_number"]}
        (tmp_path / "facts.json").write_text(json.dumps(
            {"version": 1, "root": ".", "files": {"train.py": {"functions": {"Trainer.step": step}}}}))
    return tmp_path


def _graph(capsys, root, *facts):
    code, out, err = run_cli(capsys, "graph", str(root), "--region", "Trainer.step", "--no-cache", "--json", *facts)
    return json.loads(out)


def test_the_regions_recorded_calls_reach_from_the_core(tmp_path, capsys):
    root = _project(tmp_path, with_facts=True)
    summary = _graph(capsys, root, "--facts", str(root / "facts.json"))
    assert summary["split"] and summary["core"] == "Trainer.step_core", summary
    blocking = {(b["path"].rpartition("/")[2], b["line"], b["code"]) for b in summary["blocking"]}
    assert ("loss.py", 11, "GS101") in blocking, summary["blocking"]
    assert ("loss.py", 5, "GS101") not in blocking  # as_number: the wrapper's logging calls it


def test_without_facts_the_attribute_call_is_not_followed(tmp_path, capsys):
    summary = _graph(capsys, _project(tmp_path, with_facts=False))
    assert not [b for b in summary["blocking"] if b["path"].endswith("loss.py")], summary["blocking"]
