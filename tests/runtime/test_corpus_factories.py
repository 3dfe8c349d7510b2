"""Every corpus program's `capture.py` factory (used by bench/bench_corpus_capture.py on a GPU)
builds on the CPU and its step runs through a simulated trial: warm-up, capture, replays and
the eager reference, with the program's objects put back afterwards."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from graphsafe.runtime import trial_capture
from graphsafe.runtime.capture import _SimulatedBackend

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
FACTORIES = sorted(CORPUS.glob("*/capture.py"))


def load(path: Path):
    folder = str(path.parent)
    before = set(sys.modules)
    spec = importlib.util.spec_from_file_location(f"corpus_capture_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, before, folder


@pytest.mark.parametrize("path", FACTORIES, ids=lambda p: p.parent.name)
def test_factory_step_runs_through_a_simulated_trial(path):
    module, before, folder = load(path)
    try:
        target = module.make("cpu")
        mode = "graphed_callables" if path.parent.name == "moe_router" else "graph"
        report = trial_capture(target["step"], target.get("args", ()), mode=mode, timing=False,
                               _backend=_SimulatedBackend())
        # a simulated trial runs the step eagerly in every phase: only a step that raises fails here
        assert report.status in ("ok", "mismatch"), report.to_text()
        assert report.comparisons, "no state was tracked"
    finally:  # the programs' modules share names (model, train): drop them for the next program
        for name in set(sys.modules) - before:
            if str(getattr(sys.modules[name], "__file__", "") or "").startswith(folder):
                del sys.modules[name]
        while folder in sys.path:
            sys.path.remove(folder)


def test_every_runnable_tuning_program_has_a_factory():
    have = {p.parent.name for p in FACTORIES}
    assert {"train_loop", "decode_loop", "diffusion_sampler", "rl_policy", "moe_router", "beam_search",
            "speech_eval", "negatives"} <= have
