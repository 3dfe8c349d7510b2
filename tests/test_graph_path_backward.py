"""bench/graph_path.py's forward+backward mode on CPU (graphed(..., backend="eager"), the stand-in
tests/runtime uses): the `graph`ed moe_router wired to graphed() with its backward, compared with an
eager twin of the original over several steps with the inputs and the padding changing."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
import graph_path  # noqa: E402

JITTER = "x = x * torch.empty_like(x).uniform_(1.0 - self.jitter, 1.0 + self.jitter)"


@pytest.fixture
def fresh_modules():
    def clear():
        for name in ("capture", "model", "moe", "train"):
            sys.modules.pop(name, None)
    clear()
    yield
    clear()


def _graphed_moe_router(tmp_path: Path) -> tuple[Path, Path]:
    """(original, graphed) moe_router, its jitter on (drawn by graph's wrapper before the core)."""
    from graphsafe.config import Settings
    from graphsafe.graph_command import plan

    original = tmp_path / "original" / "moe_router"
    shutil.copytree(REPO / "corpus" / "moe_router", original)
    assert JITTER in (original / "moe.py").read_text()
    target = tmp_path / "graphed" / "moe_router"
    shutil.copytree(original, target)
    result = plan([target], Settings(root=target), "MoEModel.forward", use_cache=False)
    assert not result.blocking, result.blocking
    for path, (_old, new) in result.changed.items():
        Path(path).write_bytes(new)
    return original, target


@pytest.mark.slow
def test_graphed_moe_router_forward_and_backward_match_the_eager_twin(tmp_path, fresh_modules):
    original, target = _graphed_moe_router(tmp_path)
    result = graph_path.run_backward(target, steps=5, options={}, device="cpu", backend="eager",
                                     original_dir=original)
    assert result["status"] == "ok", result
    assert result["graphed"] == "forward_core" and result["replays"] >= 3, result
    assert max(result["max_diff"].values()) < 1e-4, result


@pytest.mark.slow
def test_a_graphed_program_that_computes_otherwise_is_reported_as_differing(tmp_path, fresh_modules):
    original, target = _graphed_moe_router(tmp_path)
    moe = target / "moe.py"
    text = moe.read_text()
    assert "/ rows.sum())" in text
    moe.write_text(text.replace("/ rows.sum())", "/ rows.numel())", 1))  # a mean over every row, padding too
    result = graph_path.run_backward(target, steps=4, options={}, device="cpu", backend="eager",
                                     original_dir=original)
    assert result["status"] == "differs", result
    assert any("output 1" in m for m in result["mismatches"]), result["mismatches"]


@pytest.mark.cuda
@pytest.mark.slow
def test_graphed_moe_router_forward_and_backward_replay_like_the_eager_twin_on_a_gpu(tmp_path, fresh_modules):
    original, target = _graphed_moe_router(tmp_path)
    result = graph_path.run_backward(target, steps=6, options={}, device="cuda", backend="cuda",
                                     original_dir=original)
    assert result["status"] == "ok", result
    assert result["replays"] >= 3, result
