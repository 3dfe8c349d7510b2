"""graphed(shapes=N): a call whose inputs have another non-batch shape (a batch trimmed to its
longest utterance) captures graphs of its own and later calls of that shape replay them; past N
shapes, eager with a RuntimeWarning. On the eager backend, on the CPU stand-in for torch.cuda.graph
(tests/runtime/cpu_graph.py), and on a GPU (cuda-marked)."""

from __future__ import annotations

import warnings

import pytest
import torch

from graphsafe.runtime import graphed
from graphsafe.runtime.graphed import GraphedInputError
from tests.runtime.cpu_graph import simulate_cuda_graphs


class Frames(torch.nn.Module):
    """Pools the frames each utterance has, and counts the frames it has seen in a buffer (state the
    step writes in place)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.proj = torch.nn.Linear(4, 3)
        self.register_buffer("frames_seen", torch.zeros(()))

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        mask = torch.arange(feats.shape[1], device=feats.device)[None, :] < lengths[:, None]
        self.frames_seen.add_(mask.sum())
        pooled = (feats * mask[..., None]).sum(1) / lengths[:, None].clamp(min=1)
        return self.proj(torch.tanh(pooled)) + feats.shape[1]  # the length itself is baked: per-shape graphs


def batch(length: int, rows: int = 2, device: str = "cpu", seed: int = 0):
    generator = torch.Generator().manual_seed(seed * 100 + length)
    feats = torch.randn(rows, length, 4, generator=generator).to(device)
    lengths = torch.randint(1, length + 1, (rows,), generator=generator)
    lengths[0] = length  # trimmed to the longest one
    return feats, lengths.to(device)


def run_lengths(fast, eager, lengths_seq, device="cpu"):
    """Each call's output equals eager's; the replays each call added."""
    added = []
    for i, length in enumerate(lengths_seq):
        feats, lengths = batch(length, device=device, seed=i)
        before = fast.stats["replays"]
        with torch.no_grad():
            got, expected = fast(feats, lengths), eager(feats, lengths)
        torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
        added.append(fast.stats["replays"] - before)
    return added


@pytest.mark.parametrize("simulated", [False, True], ids=["eager-backend", "cpu-graph"])
def test_each_new_length_gets_a_graph_and_later_calls_of_it_replay(simulated, monkeypatch):
    if simulated:
        simulate_cuda_graphs(monkeypatch)
    model, reference = Frames(), Frames()
    fast = graphed(model, pad=False, shapes=4, nvtx_ranges=False, backend="cuda" if simulated else "eager")
    lengths_seq = [10, 14, 20, 10, 14, 20, 20, 10]
    added = run_lengths(fast, reference, lengths_seq)
    assert added == [1] * 8, (added, fast.stats)  # a length's first call captures its graph, then replays it
    assert fast.stats["eager"] == 0 and fast.stats["other_shapes"] == 2 and fast.stats["past_shape_limit"] == 0
    assert len(fast._shapes) == 2 and all(len(other.graphs) == 1 for other in fast._shapes.values())
    assert "shapes=3/4" in repr(fast)
    # state the step writes in place: the warm-ups and captures were undone, each call counted once
    assert torch.equal(model.frames_seen, reference.frames_seen), (model.frames_seen, reference.frames_seen)


@pytest.mark.parametrize("simulated", [False, True], ids=["eager-backend", "cpu-graph"])
def test_past_the_shape_limit_calls_run_eagerly_with_one_warning(simulated, monkeypatch):
    if simulated:
        simulate_cuda_graphs(monkeypatch)
    model, reference = Frames(), Frames()
    fast = graphed(model, pad=False, shapes=2, nvtx_ranges=False, backend="cuda" if simulated else "eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        added = run_lengths(fast, reference, [10, 14, 20, 12, 10, 14, 20])
    limit = [w for w in caught if issubclass(w.category, RuntimeWarning) and "shapes=2" in str(w.message)]
    assert len(limit) == 1, [str(w.message) for w in caught]
    assert added == [1, 1, 0, 0, 1, 1, 0], added  # 20 and 12: no graph (two shapes have theirs)
    assert fast.stats["past_shape_limit"] == 3 and fast.stats["eager"] == 3 and fast.stats["other_shapes"] == 1
    assert torch.equal(model.frames_seen, reference.frames_seen)


def test_batch_buckets_and_padding_work_within_each_shape():
    model, reference = Frames(), Frames()
    fast = graphed(model, buckets=[2, 4], shapes=3, backend="eager")  # pad=True: inference default
    for rows, length in [(3, 10), (2, 14), (3, 14), (4, 10)]:
        feats, lengths = batch(length, rows=rows)
        with torch.no_grad():
            torch.testing.assert_close(fast(feats, lengths), reference(feats, lengths), rtol=1e-6, atol=1e-6)
    assert fast.stats["padded"] == 2 and fast.stats["replays"] == 4 and fast.stats["eager"] == 0, fast.stats
    assert set(fast.graphs) == {2, 4} and set(next(iter(fast._shapes.values())).graphs) == {2, 4}


def test_one_shape_by_default_another_is_an_error_with_padding_and_eager_without():
    model = Frames()
    padded = graphed(model, buckets=[2], backend="eager")
    padded(*batch(10))
    with pytest.raises(GraphedInputError, match="GS403"):
        padded(*batch(14))
    unpadded = graphed(model, pad=False, backend="eager")
    unpadded(*batch(10))
    unpadded(*batch(14))
    assert unpadded.stats == {"replays": 1, "eager": 1, "padded": 0} and not unpadded._shapes


@pytest.mark.parametrize("bad", [0, -1, True, 2.0])
def test_shapes_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="shapes must be an integer >= 1"):
        graphed(lambda x: x, (torch.ones(2, 2),), shapes=bad, backend="eager")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_each_new_length_replays_its_own_cuda_graph():
    model, reference = Frames().cuda(), Frames().cuda()
    fast = graphed(model, pad=False, shapes=3)
    added = run_lengths(fast, reference, [10, 14, 20, 10, 14, 20, 12, 20], device="cuda")
    assert added == [1, 1, 1, 1, 1, 1, 0, 1], (added, fast.stats)
    assert fast.stats["other_shapes"] == 2 and fast.stats["past_shape_limit"] == 1 and fast.stats["eager"] == 1
    assert torch.equal(model.frames_seen, reference.frames_seen)
