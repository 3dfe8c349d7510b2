"""Every corpus program runs on CPU, returns finite numbers, and is deterministic given its seed.

Each program runs in processes of its own (tests/program_runner.py: forks of a worker that imported
torch once), as `python run.py` would: its folder first on sys.path (sibling modules such as `model`
share names across programs)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests import program_runner

pytest.importorskip("torch")

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
PROGRAMS = sorted(p.parent.name for p in CORPUS.glob("*/run.py"))


def test_corpus_is_not_empty():
    assert {"train_loop", "decode_loop", "negatives"} <= set(PROGRAMS)


@pytest.mark.slow
@pytest.mark.parametrize("name", PROGRAMS)
def test_run_returns_finite_floats_and_is_deterministic(name):
    # one process calls run() twice (no state leaks between calls), another once (same seed, same numbers)
    twice = program_runner.run_repeatedly(CORPUS / name, repeat=2)
    first = twice["results"][0]
    assert first, f"{name}: run() must return a non-empty dict"
    for key, kind in twice["types"].items():
        assert kind == "float", f"{name}: {key} is {kind}, not float"
        assert math.isfinite(first[key]), f"{name}: {key} = {first[key]}"
    assert twice["results"][1] == first, f"{name}: a second call in the same process differs"
    assert program_runner.run_program(CORPUS / name) == first, f"{name}: two runs with the same seed differ"
    program_runner.remember_corpus_result(CORPUS / name, first)


@pytest.mark.parametrize("name", PROGRAMS)
def test_folder_layout(name):
    folder = CORPUS / name
    readme = (folder / "README.md").read_text()
    assert 2 <= len([line for line in readme.splitlines() if line.strip()]) <= 6
    assert not (folder / "__init__.py").exists()
    labelled = "# expect:" in "".join(p.read_text() for p in folder.glob("*.py"))
    assert labelled == (name != "negatives"), f"{name}: labels present={labelled}"
