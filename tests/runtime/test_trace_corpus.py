"""`graphsafe trace` on corpus programs (CPU) agrees with the static labels where they overlap."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import golden

pytestmark = pytest.mark.slow  # traces corpus programs in fresh processes

# program folder, script, region pattern the script's eager path calls
PROGRAMS = [
    ("train_loop", "train.py", "Trainer.train_step"),
    ("decode_loop", "generate.py", "decode_step"),
]
SYNC_OR_BRANCH = ("GS1", "GS2")


@pytest.mark.parametrize("folder,script,region", PROGRAMS)
def test_trace_matches_labels(folder, script, region):
    program = golden.CORPUS / folder
    result = subprocess.run(
        [sys.executable, "-m", "graphsafe", "trace", script, "--region", region, "--steps", "2", "--format", "json"],
        cwd=program, capture_output=True, text=True, timeout=240,
    )
    assert result.returncode in (0, 1), result.stderr[-2000:]
    findings = json.loads(result.stdout)
    labels = {}
    for rel, line, code in golden.labels(program):
        labels.setdefault((Path(rel).name, line), set()).add(code)
    seen = {(Path(f["filename"]).name, f["location"]["row"], f["code"]) for f in findings}
    sync_seen = {(name, line, code) for name, line, code in seen if code.startswith(SYNC_OR_BRANCH)}
    assert sync_seen, "the tracer found no sync in a program full of them"
    # Where the tracer reports a sync at a labelled line, the static label names the same hazard
    # family (GS1/GS2 overlap: a `bool()` branch may be labelled GS201 or GS105).
    at_labels = [s for s in sync_seen if (s[0], s[1]) in labels]
    assert len(at_labels) >= len(sync_seen) * 0.6, (sorted(sync_seen), labels)
    for name, line, code in at_labels:
        same_family = {c for c in labels[(name, line)] if c.startswith(SYNC_OR_BRANCH)}
        assert same_family, f"{name}:{line}: traced {code}, labelled {labels[(name, line)]}"
    exact = [s for s in at_labels if s[2] in labels[(s[0], s[1])]]
    assert len(exact) >= len(at_labels) * 0.75, (sorted(at_labels), labels)


def test_static_merge_view_on_a_corpus_program():
    program = golden.CORPUS / "train_loop"
    result = subprocess.run(
        [sys.executable, "-m", "graphsafe", "trace", "train.py", "--region", "Trainer.train_step", "--steps", "2",
         "--static", "--format", "json"],
        cwd=program, capture_output=True, text=True, timeout=240,
    )
    assert result.returncode in (0, 1), result.stderr[-2000:]
    merged = json.loads(result.stdout)["merged"]
    both = {(Path(e["filename"]).name, e["row"], e["code"]) for e in merged["both"]}
    # seen by both faces with the same code at the same line
    assert ("train.py", 67, "GS101") in both and ("model.py", 42, "GS101") in both
    static_only = {(Path(e["filename"]).name, e["code"]) for e in merged["static only"]}
    assert ("train.py", "GS106") in static_only  # the synchronize runs only on CUDA
