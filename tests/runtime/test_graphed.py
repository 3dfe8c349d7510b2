"""The graphed helper on the CPU: the pure bucket logic, and the whole input handling (buckets,
padding, copies in and back, output cuts, errors) on the eager backend, which replays by calling
the function on the static buffers instead of a CUDA graph."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphsafe.runtime import graphed
from graphsafe.runtime.graphed import (
    GraphedCallable,
    GraphedInputError,
    choose_bucket,
    normalize_buckets,
    nvtx_range,
    pad_batch,
    unpad_batch,
)

# --- pure functions -------------------------------------------------------------------------------


def test_normalize_buckets():
    assert normalize_buckets([8, 1, 4, 4, 2]) == (1, 2, 4, 8)
    assert normalize_buckets(16) == (16,)
    assert normalize_buckets(None, sample=5) == (5,)
    for bad in ([], [0], [2, -1], [1.5], [True]):
        with pytest.raises(ValueError):
            normalize_buckets(bad)
    with pytest.raises(ValueError, match="sample_args"):
        normalize_buckets(None)


@given(st.lists(st.integers(1, 64), min_size=1, max_size=6), st.integers(0, 80))
def test_choose_bucket_with_padding_is_the_smallest_that_fits(raw, size):
    buckets = normalize_buckets(raw)
    if size > buckets[-1]:
        with pytest.raises(GraphedInputError, match="larger than the largest bucket"):
            choose_bucket(size, buckets, pad=True)
        return
    bucket = choose_bucket(size, buckets, pad=True)
    assert bucket >= size and bucket in buckets
    assert all(b < size for b in buckets if b < bucket)


@given(st.lists(st.integers(1, 64), min_size=1, max_size=6), st.integers(0, 80))
def test_choose_bucket_without_padding_is_exact_or_none(raw, size):
    buckets = normalize_buckets(raw)
    assert choose_bucket(size, buckets, pad=False) == (size if size in buckets else None)


@settings(max_examples=50)
@given(st.integers(1, 6), st.integers(0, 6), st.integers(0, 2), st.floats(-5, 5))
def test_pad_then_unpad_is_identity(rows, extra, dim, value):
    shape = [3, 2, 4]
    shape[dim] = rows
    x = torch.randn(shape)
    padded = pad_batch(x, rows + extra, dim, value)
    assert padded.shape[dim] == rows + extra
    assert torch.equal(unpad_batch(padded, rows, dim), x)
    if extra:
        assert bool((padded.narrow(dim, rows, extra) == torch.tensor(value, dtype=x.dtype)).all())
    with pytest.raises(ValueError):
        pad_batch(x, rows - 1, dim) if rows > 1 else (_ for _ in ()).throw(ValueError())


def test_nvtx_range_falls_back_to_torch(monkeypatch):
    import sys

    import graphsafe.runtime.graphed as module

    module._nvtx_module.cache_clear()
    monkeypatch.setitem(sys.modules, "nvtx", None)  # not installed
    try:
        assert module._nvtx_module() is None
        assert nvtx_range("x") is not None  # torch.cuda.nvtx.range's context manager (not entered on the CPU)
    finally:
        module._nvtx_module.cache_clear()


# --- inference: a decode-like step with a static cache ------------------------------------------------


class Decoder(torch.nn.Module):
    """One decode step: writes this step's key into a cache slot per sequence, attends over the
    cache up to the (device) position, returns logits."""

    def __init__(self, max_batch: int = 8, length: int = 6, dim: int = 4, vocab: int = 5) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.key = torch.nn.Linear(dim, dim)
        self.out = torch.nn.Linear(dim, vocab)
        self.register_buffer("cache", torch.zeros(max_batch, length, dim))

    def forward(self, tokens, position):
        h = self.embed(tokens)  # (B, dim)
        batch = tokens.shape[0]
        cache = self.cache[:batch]
        slot = torch.nn.functional.one_hot(position, cache.shape[1]).to(h.dtype)  # (L,), no host read
        cache.mul_(1 - slot[None, :, None]).add_(slot[None, :, None] * self.key(h)[:, None, :])
        visible = (torch.arange(cache.shape[1]) <= position).to(h.dtype)
        weights = torch.softmax((cache @ h[:, :, None]).squeeze(-1) - 1e9 * (1 - visible), dim=-1)
        return self.out((weights[:, :, None] * cache).sum(1) + h)


def decode_pair(buckets=(1, 2, 4, 8), **options):
    torch.manual_seed(0)
    model = Decoder()
    reference = copy.deepcopy(model)
    tokens, position = torch.randint(0, 5, (8,)), torch.tensor(0)
    step = graphed(model, (tokens, position), buckets=list(buckets), backend="eager", **options)
    return model, reference, step


def test_decode_through_buckets_matches_eager_and_counts_padding():
    model, reference, step = decode_pair()
    assert torch.equal(model.cache, reference.cache)  # warm-up and capture left the cache as it was
    for batch in (3, 5, 8, 1):  # a batch of sequences decodes a few positions, then the next batch
        model.cache.zero_()  # the graphs read the module's buffer: resetting it in place is seen
        reference.cache.zero_()
        for position in range(3):
            tokens = torch.randint(0, 5, (batch,))
            pos = torch.tensor(position)
            out = step(tokens, pos)
            with torch.no_grad():
                expected = reference(tokens, pos)
            assert out.shape == (batch, 5)
            torch.testing.assert_close(out, expected)
            assert not out.requires_grad
        # padded rows wrote into cache rows no sequence owns; the real rows match
        torch.testing.assert_close(model.cache[:batch], reference.cache[:batch])
    assert step.stats == {"replays": 12, "eager": 0, "padded": 6}
    assert step.buckets == (1, 2, 4, 8)
    assert set(step.graphs) == {1, 2, 4, 8}


def test_outputs_are_fresh_tensors_or_documented_views():
    _, _, step = decode_pair()
    a = step(torch.tensor([1, 2]), torch.tensor(0))
    b = step(torch.tensor([3, 4]), torch.tensor(1))
    assert a.data_ptr() != b.data_ptr()
    _, _, views = decode_pair(clone_outputs=False)
    v1 = views(torch.tensor([1, 2]), torch.tensor(0))
    static = views.graphs[2].output
    assert v1.data_ptr() == static.data_ptr()
    v3 = views(torch.tensor([1, 2, 3]), torch.tensor(0))  # another bucket leaves bucket 2's output alone
    assert v3.data_ptr() == views.graphs[4].output.data_ptr()


@pytest.mark.parametrize("call, message", [
    (lambda s: s(torch.randint(0, 5, (9,)), torch.tensor(0)), "larger than the largest bucket"),
    (lambda s: s(torch.randint(0, 5, (3,)).int(), torch.tensor(0)), "dtype torch.int32, captured torch.int64"),
    (lambda s: s(torch.randint(0, 5, (3, 1)), torch.tensor(0)), "has 2 dimensions"),
    (lambda s: s(torch.randint(0, 5, (3,)), 0), "must be a tensor, got int"),
    (lambda s: s(torch.randint(0, 5, (3,)), torch.tensor([0, 1])), "has 1 dimensions (2,), captured 0 ()"),
])
def test_mismatched_inputs_are_errors_not_wrong_answers(call, message):
    _, _, step = decode_pair()
    with pytest.raises(GraphedInputError) as raised:
        call(step)
    assert message in str(raised.value)


def test_without_padding_other_shapes_run_eagerly():
    model, reference, step = decode_pair(buckets=(4, 8), pad=False)
    out = step(torch.tensor([1, 2, 3]), torch.tensor(0))
    with torch.no_grad():
        torch.testing.assert_close(out, reference(torch.tensor([1, 2, 3]), torch.tensor(0)))
    assert step.stats["eager"] == 1 and step.stats["replays"] == 0
    step(torch.tensor([1, 2, 3, 4]), torch.tensor(1))
    assert step.stats["replays"] == 1


def test_mutated_arguments_are_copied_back_unless_they_are_the_static_ones():
    def accumulate(x, total):
        total.add_(x.sum(0))
        return x * 2

    total = torch.zeros(3)
    step = graphed(accumulate, (torch.ones(4, 3), total), buckets=[4], batched=[0], backend="eager")
    assert torch.equal(total, torch.zeros(3))  # warm-up undone
    out = step(torch.ones(2, 3), total)  # the captured tensor itself: updated in place, no copy
    assert torch.equal(total, torch.full((3,), 2.0)) and out.shape == (2, 3)
    other = torch.zeros(3)
    step(torch.ones(3, 3), other)  # another tensor: copied in, and the update copied back
    assert torch.equal(other, torch.full((3,), 3.0))
    assert step.graphs[4].inout == [1]


def test_python_values_are_baked_in():
    step = graphed(lambda x, scale: x * scale, (torch.ones(2, 2), 0.5), buckets=[2], backend="eager")
    assert torch.equal(step(torch.ones(1, 2), 0.5), torch.full((1, 2), 0.5))
    with pytest.raises(GraphedInputError, match="GS301"):
        step(torch.ones(1, 2), 0.7)


def test_decorator_captures_on_first_call_and_keeps_the_name():
    @graphed(buckets=[2, 4], backend="eager")
    def double(x):
        """Doubles."""
        return x * 2

    assert isinstance(double, GraphedCallable) and double.__name__ == "double" and double.__doc__ == "Doubles."
    assert not double.graphs
    assert torch.equal(double(torch.ones(3, 2)), torch.full((3, 2), 2.0))
    assert set(double.graphs) == {2, 4}
    assert "buckets=[2, 4]" in repr(double)


def test_kwargs_and_nested_inputs():
    def step(pair, *, bias):
        a, b = pair
        return {"sum": a + b + bias, "first": a}

    fn = graphed(step, ((torch.ones(4, 2), torch.ones(4, 2)),), sample_kwargs={"bias": torch.ones(2)},
                 buckets=[4], backend="eager")
    out = fn((torch.ones(3, 2), torch.zeros(3, 2)), bias=torch.zeros(2))
    assert out["sum"].shape == (3, 2) and torch.equal(out["sum"], torch.ones(3, 2))


def test_batched_names_the_batched_arguments():
    cache = torch.zeros(8, 3)  # same leading size as the batch: the heuristic would call it batched
    fn = graphed(lambda x, c: x + c[: x.shape[0]], (torch.ones(8, 3), cache), buckets=[8], batched=[0],
                 backend="eager")
    assert torch.equal(fn(torch.ones(2, 3), cache), torch.ones(2, 3))
    with pytest.raises(GraphedInputError, match="batched=\\[0, ...\\]"):
        graphed(lambda x, c: x + c[: x.shape[0]], (torch.ones(8, 3), cache), buckets=[8], backend="eager")(
            torch.ones(2, 3), cache)


@pytest.mark.parametrize("options, error, message", [
    ({"train": True, "pad": True}, ValueError, "cannot pad"),
    ({"warmup": 0}, ValueError, "warmup"),
    ({"backend": "tpu"}, ValueError, "backend"),
    ({"batch_dim": -1}, ValueError, "batch_dim"),
    ({"buckets": [0]}, ValueError, "positive"),
    ({"optimizer": "adam"}, TypeError, "optimizer"),
])
def test_bad_options(options, error, message):
    with pytest.raises(error, match=message):
        graphed(lambda x: x, (torch.ones(2, 2),), backend=options.pop("backend", "eager"), **options)


def test_cuda_backend_rejects_tensors_on_other_devices(monkeypatch):
    # a CPU tensor is checked at capture instead: the step may move it (runtime/host_arguments.py)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "graph_pool_handle", lambda: (0, 1))
    with pytest.raises(GraphedInputError, match="is on meta"):
        graphed(lambda x: x, (torch.ones(2, 2, device="meta"),))


# --- training -------------------------------------------------------------------------------------


def make_train(optimizer="sgd"):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    if optimizer == "sgd":  # capturable AdamW needs CUDA: the GPU tests train with it
        opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, capturable=False)

    def train_step(x, y):
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, opt, train_step


def test_training_step_matches_eager_and_warmup_is_undone():
    model, opt, step = make_train()
    ref_model, ref_opt, ref_step = make_train()
    x, y = torch.randn(4, 4), torch.randn(4, 1)
    g = graphed(step, (x, y), train=True, optimizer=opt, backend="eager")
    for name, p in model.named_parameters():  # the warm-up steps were undone
        assert torch.equal(p, dict(ref_model.named_parameters())[name]), name
    assert all(float(v.abs().sum()) == 0 for s in opt.state.values() for v in s.values())
    for _ in range(3):
        xb, yb = torch.randn(4, 4), torch.randn(4, 1)
        torch.testing.assert_close(g(xb, yb), ref_step(xb, yb))
    for name, p in model.named_parameters():
        torch.testing.assert_close(p, dict(ref_model.named_parameters())[name])
    with pytest.raises(GraphedInputError, match="dtype"):
        g(torch.randn(4, 4).double(), torch.randn(4, 1))
    g(torch.randn(2, 4), torch.randn(2, 1))  # another batch size runs eagerly (never padded)
    assert g.stats["eager"] == 1


def test_a_non_capturable_optimizer_off_the_gpu_steps_as_built():
    # graphed turns capturable on only where a graph will step it (parameters on the GPU: the
    # cuda tests); the eager backend leaves the group as the user built it
    model, opt, step = make_train("adamw-not-capturable")
    graphed(step, (torch.randn(4, 4), torch.randn(4, 1)), train=True, optimizer=opt, backend="eager")
    assert opt.param_groups[0]["capturable"] is False


def test_a_capture_error_says_the_rule_the_line_and_torchs_words():
    from graphsafe.runtime.classify import CaptureFailure
    from graphsafe.runtime.graphed import GraphedCaptureError

    failure = CaptureFailure(code="GS402", name="host-data-tensor", error_class="pageable host copy during capture",
                             cause="a CPU tensor is copied to the GPU inside the step",
                             message="Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the "
                                     "CPU tensor is pinned", file="/nowhere/train.py", line=12)
    error = GraphedCaptureError("step", failure)
    text = str(error)
    assert text.startswith("graphed step: capture failed at ")
    assert "train.py:12: GS402 [host-data-tensor] a CPU tensor is copied" in text
    assert text.endswith("(torch: Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the "
                         "CPU tensor is pinned)")
    assert error.failure is failure and isinstance(error, RuntimeError)


def test_a_snapshot_restore_skips_an_expanded_view_it_cannot_write():
    # kornia keeps `expand`ed parameters among its state: copy_ into a stride-0 view raises
    from graphsafe.runtime.snapshot import Snapshot, Tracked

    base = torch.zeros(1, 3)
    view = base.expand(4, 3)
    saved = Snapshot(Tracked([("base", base), ("view", view)]), rng=False)
    base.add_(1.0)
    saved.restore_values()
    assert torch.equal(base, torch.zeros(1, 3)) and torch.equal(view, torch.zeros(4, 3))


def test_a_later_calls_argument_is_not_copied_into_the_tensor_the_first_call_passed():
    # graphed() took an unbatched argument as its buffer: the next call's values were copied into
    # the caller's first tensor (an ODE solver's y0 changed under the caller)
    first, later = torch.ones(3), torch.full((3,), 5.0)
    fast = graphed(lambda x: x * 2, (first,), batched=[], backend="eager")
    assert torch.equal(fast(first), torch.full((3,), 2.0)) and torch.equal(fast(later), torch.full((3,), 10.0))
    assert torch.equal(first, torch.ones(3)) and torch.equal(later, torch.full((3,), 5.0))


def test_one_tensor_passed_as_two_arguments_gets_two_buffers():
    t = torch.tensor(1.0)
    fast = graphed(lambda a, b: a * 10 + b, (t, t), batched=[], backend="eager")
    assert fast(t, t).item() == 11.0
    assert fast(torch.tensor(2.0), torch.tensor(3.0)).item() == 23.0 and t.item() == 1.0


def test_state_the_step_writes_in_place_stays_the_callers_tensor():
    cache = torch.zeros(3)

    def step(x, cache):
        cache.add_(x)
        return cache * 1

    fast = graphed(step, (torch.ones(3), cache), batched=[], backend="eager")
    for _ in range(3):
        out = fast(torch.ones(3), cache)
    assert torch.equal(cache, torch.full((3,), 3.0)) and torch.equal(out, cache)


def test_a_cpu_argument_gets_a_buffer_of_graphed_s_own():
    weight = torch.ones(4)
    fast = graphed(lambda x, w: x * w, (torch.ones(4), weight), batched=[], backend="eager")
    fast(torch.ones(4), weight)
    assert next(iter(fast.graphs.values())).statics[1] is not weight
