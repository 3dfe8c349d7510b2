"""bench/graph_path_compile.py, the torch.compile column of the corpus runs, on CPU with a stand-in
compiler backend: a faithful backend reads equal to the eager build over several changing steps, and a
backend that shifts the outputs is caught (the comparison can fail)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
import graph_path_compile  # noqa: E402


@pytest.fixture
def fresh_modules():
    yield
    for program in ("beam_search", "moe_router"):
        graph_path_compile.forget_modules(REPO / "corpus" / program)


def _shifting_backend(gm, example_inputs):
    def run(*args):
        out = gm(*args)
        return type(out)(o + 1e-3 if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in out)
    return run


def test_a_faithful_compiler_reads_equal_to_eager_over_changing_steps(fresh_modules):
    torch._dynamo.reset()
    result = graph_path_compile.compile_column(REPO / "corpus" / "beam_search", steps=4, backward=False,
                                               device="cpu", compile_options={"backend": "eager"}, time_it=False)
    assert result["status"] == "ok", result
    assert result["max_diff"] < 1e-5  # dynamo's graph of the same ops: float32 rounding at most


def test_a_compiler_that_shifts_outputs_is_reported_as_differing(fresh_modules):
    torch._dynamo.reset()
    result = graph_path_compile.compile_column(REPO / "corpus" / "moe_router", steps=3, backward=True,
                                               device="cpu", compile_options={"backend": _shifting_backend},
                                               time_it=False)
    assert result["status"] == "differs", result
    assert any("output" in m for m in result["mismatches"])


def test_the_forward_backward_column_compares_gradients_too(fresh_modules):
    torch._dynamo.reset()
    result = graph_path_compile.compile_column(REPO / "corpus" / "moe_router", steps=3, backward=True,
                                               device="cpu", compile_options={"backend": "eager"}, time_it=False)
    assert result["status"] == "ok", result


def test_the_timing_loop_runs_fifteen_forward_backward_calls_with_new_inputs(fresh_modules, monkeypatch):
    torch._dynamo.reset()
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)  # CPU: nothing to wait for
    result = graph_path_compile.compile_column(REPO / "corpus" / "moe_router", steps=2, backward=True,
                                               device="cpu", compile_options={"backend": "eager"})
    assert result["status"] == "ok", result
    assert result["compile_ms"] > 0 and result["eager_ms"] > 0
