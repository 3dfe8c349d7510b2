"""Tensors made from Python numbers on the device while a graph is captured (runtime/host_numbers.py)."""
import pytest
import torch

from graphsafe.runtime.host_numbers import NumbersFromPinnedMemory

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def test_outside_capture_every_call_is_torchs_own():
    with NumbersFromPinnedMemory() as mode:
        a = torch.tensor([1, 2], dtype=torch.float64)
        b = torch.as_tensor(3.0)
        c = a.new_tensor(4)
    assert mode.made == 0 and mode.kept == []
    assert a.dtype == torch.float64 and b.item() == 3.0 and c.dtype == torch.float64 and c.item() == 4.0


@pytest.mark.cuda
@cuda
def test_a_number_made_into_a_device_tensor_is_captured_and_replays_its_value():
    from torch.distributions import HalfNormal

    scale = torch.full((4,), 2.0, device="cuda")
    out = torch.empty(4, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # warm-up
        HalfNormal(scale, validate_args=False)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), NumbersFromPinnedMemory() as mode:
        base = HalfNormal(scale, validate_args=False).base_dist  # torch.tensor(0, device=...) inside
        out.copy_(base.loc + scale + torch.tensor([1.0, 2.0, 3.0, 4.0], device="cuda"))
    assert mode.made == 2 and all(t.is_pinned() for t in mode.kept)
    scale.fill_(5.0)
    graph.replay()
    torch.cuda.synchronize()
    assert out.tolist() == [6.0, 7.0, 8.0, 9.0]


def test_only_python_numbers_are_taken_host_tensors_and_objects_are_not():
    from graphsafe.runtime.host_numbers import _numbers_only

    assert _numbers_only(0) and _numbers_only([1.5, [2, True]]) and _numbers_only(())
    assert not _numbers_only(torch.ones(2)) and not _numbers_only([1, torch.ones(())]) and not _numbers_only("1")
