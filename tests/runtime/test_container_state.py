"""State a step keeps in dict attributes (kornia's `self._params = params`, a cache dict set in
place), through graphed()'s probe, capture and replay (runtime/container_state.py), capture
simulated on the CPU (tests/runtime/cpu_graph.py) and on CUDA."""
import pytest
import torch

from graphsafe.runtime.graphed import GraphedInputError, graphed
from tests.runtime.cpu_graph import simulate_cuda_graphs

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


class Augment(torch.nn.Module):
    """kornia's pattern in small: the call's parameters recorded as a dict attribute (tensors and a
    shape), the matrix as a private tensor attribute."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, 4))
        self._params = {}
        self._matrix = None

    def forward(self, x, shift):
        self._params = {"shift": shift, "scale": x.abs().mean(dim=1), "shape": tuple(x.shape)}
        self._matrix = x * self.weight + shift[:, None]
        return self._matrix * 2


class Smoother(torch.nn.Module):
    """A cache dict whose entry is set in place each call, read by the next."""

    def __init__(self):
        super().__init__()
        self.cache = {"h": torch.zeros(4, 3)}

    def forward(self, x):
        self.cache["h"] = 0.5 * self.cache["h"] + x
        return self.cache["h"].sum(-1)


class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._stats = {"calls": 0}

    def forward(self, x):
        self._stats["calls"] += 1
        return x * 2


def inputs(t, device="cpu"):
    x = torch.arange(32, dtype=torch.float32, device=device).reshape(8, 4) / (t + 1) - 3
    return x, torch.linspace(-1, 1, 8, device=device) * (t + 1)


def check_augment(device="cpu"):
    aug, twin = Augment().to(device), Augment().to(device)
    step = graphed(aug.forward, nvtx_ranges=False)  # one bucket of 8: graphed() probes with 7 rows
    for t in range(4):
        x, shift = inputs(t, device)
        with torch.no_grad():
            out, expected = step(x, shift), twin(x, shift)
        torch.testing.assert_close(out, expected, rtol=0, atol=0)
        assert aug._params.keys() == twin._params.keys() and aug._params["shape"] == (8, 4)
        for key in ("shift", "scale"):  # this call's values, not the probe's 7 rows or the capture's
            torch.testing.assert_close(aug._params[key], twin._params[key], rtol=0, atol=0)
        torch.testing.assert_close(aug._matrix, twin._matrix, rtol=0, atol=0)
    return step


def test_a_dict_attribute_rebound_per_call_holds_each_replays_values(monkeypatch):
    simulate_cuda_graphs(monkeypatch)
    step = check_augment()
    assert step.stats["replays"] == 4


@pytest.mark.parametrize("reset", [True, False], ids=["reset", "no-reset"])
def test_the_probe_leaves_no_binding_of_its_own(monkeypatch, reset):
    simulate_cuda_graphs(monkeypatch)
    aug = Augment()
    before = aug._params
    graphed(aug.forward, inputs(0), nvtx_ranges=False, reset_after_warmup=reset)  # no call of the caller's yet
    assert aug._params is before and aug._params == {} and aug._matrix is None


def test_a_cache_dict_set_in_place_is_read_by_the_next_replay(monkeypatch):
    simulate_cuda_graphs(monkeypatch)
    smoother, twin = Smoother(), Smoother()
    step = graphed(smoother.forward, batched=[], nvtx_ranges=False)
    for t in range(5):
        x = torch.full((4, 3), float(t)) - torch.arange(3.0)
        with torch.no_grad():
            torch.testing.assert_close(step(x), twin(x), rtol=0, atol=0)
        torch.testing.assert_close(smoother.cache["h"], twin.cache["h"], rtol=0, atol=0)


def test_a_per_call_python_value_in_a_dict_attribute_is_refused_with_its_name(monkeypatch):
    simulate_cuda_graphs(monkeypatch)
    counting = Counting()
    with pytest.raises(GraphedInputError, match=r"Counting\._stats holds \['calls'\] = 1 that differs"):
        graphed(counting.forward, (torch.ones(2, 2),), batched=[], nvtx_ranges=False)
    assert counting._stats == {"calls": 0}  # warm-up and capture undone


@pytest.mark.cuda
@cuda
def test_a_dict_attribute_rebound_per_call_holds_each_cuda_replays_values():
    assert check_augment("cuda").stats["replays"] == 4


class Tagging(torch.nn.Module):
    """A fresh object per call (no equality of its own) beside a tensor: kept as the capture made it."""

    def forward(self, x):
        self._last = (object(), x * 3)
        return x + 1


def test_a_fresh_object_in_a_tuple_attribute_is_kept_not_refused(monkeypatch):
    simulate_cuda_graphs(monkeypatch)
    tagging = Tagging()
    step = graphed(tagging.forward, batched=[], nvtx_ranges=False)
    for t in range(3):
        x = torch.full((2, 2), float(t))
        with torch.no_grad():
            step(x)
        torch.testing.assert_close(tagging._last[1], x * 3, rtol=0, atol=0)
