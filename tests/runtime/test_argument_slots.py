"""Slots of the caller's list arguments that the step rebinds (rwkv's `state[i*3+0] = x`), closed by
graphed() (runtime/argument_slots.py): eager backend, capture simulated on the CPU, and CUDA."""
import pytest
import torch

from graphsafe.runtime.graphed import GraphedInputError, graphed
from tests.runtime.cpu_graph import simulate_cuda_graphs

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


class Decoder(torch.nn.Module):
    """A recurrent decoder in small: the caller keeps `state` between tokens, the step rebinds its slots."""

    def __init__(self, swap: bool = False):
        super().__init__()
        torch.manual_seed(0)
        self.mix = torch.nn.Linear(3, 3)
        self.swap = swap

    def forward(self, tok, state):
        if self.swap:  # slot 1 rebound to slot 0's old tensor: the writes must not clobber each other
            state[0], state[1] = torch.tanh(self.mix(state[1]) + tok), state[0]
        else:
            for i in range(2):
                state[i] = torch.tanh(self.mix(state[i]) + tok + i)
        return state[1].sum(-1), state


def new_state(device="cpu"):
    return [torch.full((1, 3), 0.1, device=device), torch.full((1, 3), -0.2, device=device)]


def run_against_eager(backend, batched, swap, device="cpu", steps=5):
    graphed_model, eager_model = Decoder(swap).to(device), Decoder(swap).to(device)
    step = graphed(graphed_model.forward, backend=backend, batched=batched, nvtx_ranges=False)
    state, twin = new_state(device), new_state(device)
    originals = list(state)
    for t in range(steps):
        tok = torch.full((1, 3), 0.3 * t - 0.5, device=device)
        with torch.no_grad():
            out, returned = step(tok, state)
            expected, _ = eager_model(tok, twin)
        torch.testing.assert_close(out, expected, rtol=0, atol=0)
        for i in range(2):  # the caller's own list reads the new state, as eagerly
            torch.testing.assert_close(state[i], twin[i], rtol=0, atol=0)
            torch.testing.assert_close(returned[i], twin[i], rtol=0, atol=0)
    for original, fresh in zip(originals, new_state(device)):  # the caller's first tensors were not written
        assert torch.equal(original, fresh)
    return step


@pytest.mark.parametrize("swap", [False, True], ids=["rebound", "swapped"])
@pytest.mark.parametrize("batched", [[], None], ids=["caller-buffers", "batched"])
def test_rebound_list_slots_of_an_argument_follow_eager_over_steps_eager_backend(batched, swap):
    run_against_eager("eager", batched, swap)


@pytest.mark.parametrize("swap", [False, True], ids=["rebound", "swapped"])
@pytest.mark.parametrize("batched", [[], None], ids=["caller-buffers", "batched"])
def test_rebound_list_slots_of_an_argument_follow_eager_over_replays(monkeypatch, batched, swap):
    simulate_cuda_graphs(monkeypatch)
    step = run_against_eager("cuda", batched, swap)
    assert step.stats["replays"] == 5 and step.stats["eager"] == 0


def test_a_new_state_list_from_the_caller_is_read_by_the_next_replay(monkeypatch):
    simulate_cuda_graphs(monkeypatch)
    graphed_model, eager_model = Decoder(), Decoder()
    step = graphed(graphed_model.forward, batched=[], nvtx_ranges=False)
    tok = torch.full((1, 3), 0.2)
    with torch.no_grad():
        step(tok, new_state())
        state, twin = [torch.full((1, 3), 0.7), torch.zeros(1, 3)], [torch.full((1, 3), 0.7), torch.zeros(1, 3)]
        out, _ = step(tok, state)
        expected, _ = eager_model(tok, twin)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    torch.testing.assert_close(state[0], twin[0], rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["eager", "cuda"])
def test_padded_batches_get_their_own_rows_of_the_state_buffers_in_their_slots(monkeypatch, backend):
    if backend == "cuda":
        simulate_cuda_graphs(monkeypatch)
    graphed_model, eager_model = Decoder(), Decoder()
    step = graphed(graphed_model.forward, backend=backend, buckets=[4], nvtx_ranges=False)
    state = [torch.linspace(-1, 1, 9).reshape(3, 3), torch.zeros(3, 3)]
    twin = [t.clone() for t in state]
    for t in range(4):
        tok = torch.full((3, 3), 0.25 * t)
        with torch.no_grad():
            out, _ = step(tok, state)
            expected, _ = eager_model(tok, twin)
        torch.testing.assert_close(out, expected, rtol=0, atol=0)
        assert [tuple(s.shape) for s in state] == [(3, 3), (3, 3)]
        for mine, theirs in zip(state, twin):
            torch.testing.assert_close(mine, theirs, rtol=0, atol=0)
    assert step.stats["padded"] == 4


def test_a_step_that_appends_to_its_list_argument_is_refused_with_the_argument():
    def step(x, history):
        history.append(x * 2)
        return x + 1

    with pytest.raises(GraphedInputError, match=r"changes the length of its argument args\[1\]"):
        graphed(step, (torch.ones(2, 2), [torch.zeros(2, 2)]), backend="eager", batched=[])


def test_a_slot_rebound_to_a_python_value_is_refused_with_the_slot():
    def step(x, state):
        state[1] = 5
        return x + state[0]

    with pytest.raises(GraphedInputError, match=r"rebinds args\[1\]\[1\] of its argument to int"):
        graphed(step, (torch.ones(2, 2), [torch.zeros(2, 2), 0]), backend="eager", batched=[])


@pytest.mark.cuda
@cuda
@pytest.mark.parametrize("swap", [False, True], ids=["rebound", "swapped"])
@pytest.mark.parametrize("batched", [[], None], ids=["caller-buffers", "batched"])
def test_rebound_list_slots_of_an_argument_follow_eager_over_cuda_replays(batched, swap):
    step = run_against_eager("cuda", batched, swap, device="cuda")
    assert step.stats["replays"] == 5 and step.stats["eager"] == 0
