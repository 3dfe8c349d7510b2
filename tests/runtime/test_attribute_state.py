"""State kept as attribute bindings through capture and replay (runtime/attribute_state.py, graphed.py)."""
import pytest
import torch

from graphsafe.runtime.attribute_state import AttributeState, append_again, none_flags, rebind
from graphsafe.runtime.graphed import graphed
from graphsafe.runtime.snapshot import Tracked

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


class Attention(torch.nn.Module):
    """speechbrain's LocationAwareAttention in small: a cache made on the first step after reset(),
    and the previous step's weights rebound every step."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.reset()

    def reset(self):
        self.enc_h = None
        self.prev = None

    def forward(self, enc, query):
        if self.enc_h is None:
            self.enc_h = self.proj(enc)
            self.prev = torch.zeros_like(enc)
        weights = torch.softmax(self.enc_h * query + self.prev, dim=-1)
        self.prev = weights.detach()
        return (weights * enc).sum(-1)


def test_bindings_put_back_close_a_loop_and_say_what_a_capture_left():
    attention = Attention()
    state = AttributeState(Tracked([("attention", attention)]))
    before = state.bindings()
    assert {name for _, name, _ in before.values()} == {"enc_h", "prev"}
    attention(torch.ones(2, 4), torch.ones(2, 4))  # sets both from None
    left = state.left_by_capture(before)
    assert {name for _, name, _ in left} == {"enc_h", "prev"}
    assert [name for _, name in AttributeState.from_none(before, left)] == ["enc_h", "prev"]
    state.put_back(before)
    assert attention.enc_h is None and attention.prev is None
    rebind(left)
    assert attention.enc_h is left[[n for _, n, _ in left].index("enc_h")][2]
    old = attention.prev
    after_first = state.bindings()
    attention(torch.ones(2, 4), torch.ones(2, 4))  # rebinds prev to a like tensor
    assert attention.prev is not old
    state.close_loops(after_first)
    assert attention.prev is old and none_flags([(attention, "prev")]) == (False,)


@pytest.mark.cuda
@cuda
def test_a_decoder_step_with_attribute_state_replays_like_eager_across_resets():
    torch.manual_seed(0)
    graphed_attention, eager_attention = Attention().cuda(), Attention().cuda()
    eager_attention.load_state_dict(graphed_attention.state_dict())
    step = graphed(graphed_attention.forward)
    for sequence in range(3):
        enc = torch.randn(2, 4, device="cuda", generator=None) + sequence
        graphed_attention.reset()
        eager_attention.reset()
        for t in range(4):
            query = torch.full((2, 4), 0.5 * t, device="cuda")
            with torch.no_grad():
                torch.testing.assert_close(step(enc, query), eager_attention(enc, query), rtol=0, atol=0)
    assert step.stats["replays"] == 12 and step.stats["eager"] == 0
    assert len(step._structures) == 1  # the first step (caches None) and the later ones: two graphs


class Block(torch.nn.Module):
    """A submodule that keeps a dashboard history: one appended tensor per call."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.history: list[torch.Tensor] = []
        self.hooks: list[str] = []

    def forward(self, x):
        h = self.fc(x)
        self.history.append(h.detach().abs().mean())
        return h


def test_a_capture_s_appends_are_taken_off_and_made_again_as_copies_after_each_replay():
    block = Block()
    state = AttributeState(Tracked([("block", block)]))
    block(torch.ones(2, 4))  # a warm-up call: put_back takes its append off
    state.put_back(state.bindings())
    assert block.history == []
    lengths = state.list_lengths()
    captured = block(torch.ones(2, 4))
    block.hooks.append("handle")  # a first call's registration: not a tensor, kept once
    appended = state.appended_by_capture(lengths)
    assert block.history == [] and block.hooks == ["handle"] and len(appended) == 1
    state.put_back(state.bindings())  # graphed()'s put_back after the capture keeps what it made once
    assert block.hooks == ["handle"]
    captured_value = appended[0][1][0]
    for value in (1.0, 2.0):  # a "replay" rewrites the captured tensor in place, then the appends follow
        with torch.no_grad():
            captured_value.fill_(value)
        append_again(appended)
    assert [float(v) for v in block.history] == [1.0, 2.0]
    assert all(v is not captured_value for v in block.history), "each replay's value is its own copy"
    assert captured.shape == (2, 4)


@pytest.mark.cuda
@cuda
def test_a_submodule_s_history_grows_call_by_call_like_eager():
    torch.manual_seed(0)
    graphed_block, eager_block = Block().cuda(), Block().cuda()
    eager_block.load_state_dict(graphed_block.state_dict())
    step = graphed(graphed_block.forward)
    for t in range(4):
        x = torch.full((2, 4), 0.5 * t, device="cuda")
        with torch.no_grad():
            torch.testing.assert_close(step(x), eager_block(x), rtol=0, atol=0)
    assert step.stats["replays"] == 4
    assert len(graphed_block.history) == len(eager_block.history) == 4
    torch.testing.assert_close(torch.stack(graphed_block.history), torch.stack(eager_block.history), rtol=0, atol=0)
