"""Every corpus program's `capture.py` factory (used by bench/bench_corpus_capture.py on a GPU)
builds on the CPU and its step runs through a simulated trial: warm-up, capture, replays and
the eager reference, with the program's objects put back afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus_factory import simulated_trial

pytestmark = pytest.mark.slow  # builds and runs corpus steps with torch

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
FACTORIES = sorted(CORPUS.glob("*/capture.py"))


@pytest.mark.parametrize("path", FACTORIES, ids=lambda p: p.parent.name)
def test_factory_step_runs_through_a_simulated_trial(path):
    report = simulated_trial(path, path.parent.name)
    # a simulated trial runs the step eagerly in every phase: only a step that raises fails here
    assert report.status in ("ok", "mismatch"), report.to_text()
    assert report.comparisons, "no state was tracked"


def test_every_runnable_tuning_program_has_a_factory():
    have = {p.parent.name for p in FACTORIES}
    assert {"train_loop", "decode_loop", "diffusion_sampler", "rl_policy", "moe_router", "beam_search",
            "speech_eval", "negatives"} <= have
