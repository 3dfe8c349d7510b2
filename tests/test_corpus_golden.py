"""`graphsafe check corpus/` reports exactly the labelled hazards, with the recorded chains."""

from __future__ import annotations

import os

import pytest

from tests import golden

PROGRAMS = golden.programs()


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
    monkeypatch.chdir(golden.ROOT)


# scope="module": the two tests of one program run one after the other (on one worker) and share
# its analysis (golden.check keeps the latest)
@pytest.mark.parametrize("program", [p for p in PROGRAMS if not golden.is_heldout(p)], ids=lambda p: p.name,
                         scope="module")
def test_reports_exactly_the_labels(program):
    expected = golden.implemented(golden.labels(program))
    got = golden.reported(program)
    known = {m for m in golden.KNOWN_MISSES if m in expected}
    alarms = {m for m in golden.KNOWN_FALSE_ALARMS if m[0].startswith(f"corpus/{program.name}/")}
    assert sorted(got - expected - alarms) == [], "reported but not labelled (false positives)"
    assert sorted(expected - got - known) == [], "labelled but not reported (misses)"
    assert sorted(known & got) == [], "now reported: remove it from golden.KNOWN_MISSES"
    assert sorted(alarms - got) == [], "no longer reported: remove it from golden.KNOWN_FALSE_ALARMS"


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name, scope="module")
def test_snapshot(program):
    snapshot = program / golden.SNAPSHOT
    assert snapshot.exists(), "no snapshot: run `python -m tests.golden --update` and review the diff"
    assert golden.snapshot_text(program) == snapshot.read_text(encoding="utf-8"), (
        "output changed: run `python -m tests.golden --update` and review the diff"
    )


def test_corpus_is_not_empty():
    assert len(PROGRAMS) >= 2
    assert os.path.isdir(golden.CORPUS)
