"""The graphed helper on a real GPU: a decode-like step served through batch buckets matches
eager; wrong inputs are errors; a whole training step with capturable AdamW; RNG advances."""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F

from graphsafe.runtime import graphed
from graphsafe.runtime.graphed import GraphedInputError

pytestmark = pytest.mark.cuda


class Decoder(torch.nn.Module):
    """One attention decode step over a KV cache buffer (max batch 8, 16 positions), the
    position a device tensor."""

    def __init__(self, vocab: int = 64, dim: int = 32, length: int = 16, max_batch: int = 8) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, vocab)
        self.register_buffer("k", torch.zeros(max_batch, length, dim))
        self.register_buffer("v", torch.zeros(max_batch, length, dim))
        self.register_buffer("steps", torch.arange(length))

    def forward(self, tokens: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)  # (B, dim)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        batch = tokens.shape[0]
        self.k[:batch].index_copy_(1, position.view(1), k[:, None])
        self.v[:batch].index_copy_(1, position.view(1), v[:, None])
        scores = (self.k[:batch] @ q[:, :, None]).squeeze(-1) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(self.steps > position, float("-inf"))
        return self.out((torch.softmax(scores, -1)[:, :, None] * self.v[:batch]).sum(1) + h)


def make_decoder():
    torch.manual_seed(0)
    model = Decoder().cuda()
    reference = copy.deepcopy(model)
    sample = (torch.randint(0, 64, (8,), device="cuda"), torch.zeros((), dtype=torch.long, device="cuda"))
    return model, reference, sample


def test_decode_through_batch_buckets_matches_eager():
    model, reference, sample = make_decoder()
    step = graphed(model, sample, buckets=[1, 2, 4, 8])
    assert set(step.graphs) == {1, 2, 4, 8}
    assert torch.equal(model.k, reference.k)  # warm-up writes into the cache were undone
    for batch in (3, 5, 8, 1, 2):
        model.k.zero_(), model.v.zero_(), reference.k.zero_(), reference.v.zero_()
        for position in range(4):
            tokens = torch.randint(0, 64, (batch,), device="cuda")
            pos = torch.tensor(position, device="cuda")
            out = step(tokens, pos)
            with torch.no_grad():
                expected = reference(tokens, pos)
            assert out.shape == (batch, 64)
            torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
    assert step.stats["replays"] == 20 and step.stats["padded"] == 8 and step.stats["eager"] == 0
    with pytest.raises(GraphedInputError, match="larger than the largest bucket"):
        step(torch.randint(0, 64, (9,), device="cuda"), torch.tensor(0, device="cuda"))
    with pytest.raises(GraphedInputError, match="dtype"):
        step(torch.randint(0, 64, (4,), device="cuda", dtype=torch.int32), torch.tensor(0, device="cuda"))
    with pytest.raises(GraphedInputError, match="captured on cuda"):
        step(torch.randint(0, 64, (4,)), torch.tensor(0, device="cuda"))


def test_without_padding_unseen_batches_run_eagerly():
    model, reference, sample = make_decoder()
    step = graphed(model, sample, buckets=[4, 8], pad=False)
    tokens, pos = torch.randint(0, 64, (3,), device="cuda"), torch.tensor(0, device="cuda")
    with torch.no_grad():
        expected = reference(tokens, pos)
    torch.testing.assert_close(step(tokens, pos), expected, rtol=1e-4, atol=1e-5)
    assert step.stats["eager"] == 1


def test_views_of_static_outputs_when_asked():
    model, _, sample = make_decoder()
    step = graphed(model, sample, buckets=[4, 8], clone_outputs=False)
    out = step(torch.randint(0, 64, (4,), device="cuda"), torch.tensor(0, device="cuda"))
    assert out.data_ptr() == step.graphs[4].output.data_ptr()


def test_training_step_with_capturable_adamw_matches_eager():
    def make():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 4)).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, capturable=True)

        def train_step(x, y):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return model, opt, train_step

    model, opt, step = make()
    ref_model, ref_opt, ref_step = make()
    x, y = torch.randn(16, 32, device="cuda"), torch.randint(0, 4, (16,), device="cuda")
    g = graphed(step, (x, y), train=True, optimizer=opt)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        assert torch.equal(p, q)  # warm-up undone
    for _ in range(5):
        xb, yb = torch.randn(16, 32, device="cuda"), torch.randint(0, 4, (16,), device="cuda")
        torch.testing.assert_close(g(xb, yb), ref_step(xb, yb), rtol=1e-4, atol=1e-5)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
    assert g.stats["replays"] == 5


def test_random_numbers_advance_on_every_replay():
    noisy = graphed(lambda x: F.dropout(x, 0.5), (torch.ones(4, 256, device="cuda"),), buckets=[4])
    a = noisy(torch.ones(4, 256, device="cuda"))
    b = noisy(torch.ones(4, 256, device="cuda"))
    assert not torch.equal(a, b)


def _step_with_pageable_copy(x):
    table = torch.arange(4.0)  # a CPU tensor made in the step: copying it to the GPU is a pageable copy
    return x * table.to(x.device).sum()


def _step_with_item(x):
    scale = x.sum().item()
    return x * scale


@pytest.mark.parametrize("step,code,line_text", [
    (_step_with_pageable_copy, "GS402", "table.to(x.device)"),
    (_step_with_item, "GS101", ".item()"),
], ids=["pageable-copy", "item-sync"])
def test_a_failed_capture_names_the_rule_and_the_users_line(step, code, line_text):
    from graphsafe.runtime.graphed import GraphedCaptureError

    x = torch.ones(4, device="cuda")
    with pytest.raises(GraphedCaptureError) as raised:
        graphed(step, (x,), buckets=[4], pad=False)
    failure = raised.value.failure
    assert failure.code == code, failure
    assert failure.file is not None and failure.file.endswith("test_graphed_cuda.py")
    assert line_text in (failure.source or ""), failure
    assert f"{code} [" in str(raised.value) and "torch:" in str(raised.value)
    assert raised.value.__cause__ is not None  # torch's own error stays reachable
    assert raised.value.process_usable
    y = torch.ones(4, device="cuda") * 2 + torch.randn(4, device="cuda") * 0  # CUDA and its RNG work again
    assert float(y.sum()) == 8.0


def _adamw_step(seed: int, **optimizer_kwargs):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 1)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, **optimizer_kwargs)

    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return model, opt, train_step


@pytest.mark.parametrize("kind", [{"capturable": True}, {"fused": True}])
def test_a_scheduled_lr_changes_every_replay_like_eager(kind):
    model, opt, train_step = _adamw_step(0, **kind)
    twin, twin_opt, twin_step = _adamw_step(0, **kind)
    x, y = torch.randn(64, 16, device="cuda"), torch.randn(64, 1, device="cuda")
    step = graphed(train_step, (x, y), train=True, optimizer=opt)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6)
    twin_sched = torch.optim.lr_scheduler.CosineAnnealingLR(twin_opt, T_max=6)
    for i in range(6):
        xi, yi = torch.randn(64, 16, device="cuda"), torch.randn(64, 1, device="cuda")
        torch.testing.assert_close(step(xi, yi), twin_step(xi, yi))
        sched.step(), twin_sched.step()
    torch.testing.assert_close(model[0].weight, twin[0].weight)
    assert step.stats["replays"] == 6


def test_a_number_argument_changes_every_replay_like_eager():
    weight = torch.randn(32, 32, device="cuda")

    def sample(logits, temperature, step_size):
        return torch.softmax(logits @ weight / temperature, -1) * step_size

    logits = torch.randn(8, 32, device="cuda")
    step = graphed(sample, (logits, 1.0, 2), numbers=[1, 2], batched=[])
    for temperature, size in ((1.0, 2), (0.7, 3), (1.3, 1), (0.1, 5)):
        fresh = torch.randn(8, 32, device="cuda")
        torch.testing.assert_close(step(fresh, temperature, size), sample(fresh, temperature, size))
    assert step.stats["replays"] == 4


def test_an_optimizer_built_without_capturable_is_made_capturable_and_matches_eager():
    model, opt, train_step = _adamw_step(1)  # capturable=False, as code written for the CPU builds it
    twin, twin_opt, twin_step = _adamw_step(1)
    x, y = torch.randn(64, 16, device="cuda"), torch.randn(64, 1, device="cuda")
    twin_step(x, y), train_step(x, y)  # one eager step first: its step count lives on the host
    step = graphed(train_step, (x, y), train=True, optimizer=opt)
    assert opt.param_groups[0]["capturable"] is True
    for _ in range(4):
        xi, yi = torch.randn(64, 16, device="cuda"), torch.randn(64, 1, device="cuda")
        torch.testing.assert_close(step(xi, yi), twin_step(xi, yi))
    torch.testing.assert_close(model[0].weight, twin[0].weight)


def test_small_arguments_get_own_buffers_and_large_weights_passed_again_are_not_copied():
    weight = torch.randn(1024, 1024, device="cuda")  # 4 MiB: the graph reads the caller's tensor
    first = torch.randn(1024, device="cuda")
    fast = graphed(lambda x, w: w @ x, (first, weight), batched=[])
    kept = first.clone()
    for _ in range(3):
        x = torch.randn(1024, device="cuda")
        assert torch.allclose(fast(x, weight), weight @ x, rtol=1e-4, atol=1e-4)
    statics = next(iter(fast.graphs.values())).statics
    assert statics[1] is weight and statics[0] is not first
    assert torch.equal(first, kept)  # later calls' inputs were not copied into the first one
