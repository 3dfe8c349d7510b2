"""What `graphsafe graph` rewrites in a mixture-of-experts callee: the dispatch loop over the experts
that got tokens (expert_dispatch), `bincount` at its minlength (bounded_bincount) and a host read
deciding a device counter's step (device_threshold_count). Differential tests on CPU, original vs
rewritten, over several steps with the inputs changing; gradients too."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from graphsafe.rewriters.bounded_bincount import bincount_at_minlength
from graphsafe.rewriters.device_threshold_count import counted_on_device
from graphsafe.rewriters.expert_dispatch import dense_expert_dispatch
from tests.moe_router_steps import assert_same_training_steps, load_model_module, load_source

torch = pytest.importorskip("torch")

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def _line(source: str, text: str) -> int:
    return next(i for i, row in enumerate(source.splitlines(), 1) if text in row)


# the Hugging Face Mixtral block's dispatch (transformers 4.4x), as a function of its parts
MIXTRAL = textwrap.dedent('''\
    import torch
    import torch.nn.functional as F


    def moe(hidden_states, router_logits, experts, top_k: int):
        n, hidden_dim = hidden_states.shape
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        final_hidden_states = torch.zeros((n, hidden_dim), dtype=hidden_states.dtype)
        expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=len(experts)).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:  # the experts that got tokens
            expert_layer = experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        return final_hidden_states
''')

# the older form: every expert, a `where` per expert
MIXTRAL_RANGE = textwrap.dedent('''\
    import torch
    import torch.nn.functional as F


    def moe(hidden_states, router_logits, experts, top_k: int):
        n, hidden_dim = hidden_states.shape
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
        final_hidden_states = torch.zeros((n, hidden_dim), dtype=hidden_states.dtype)
        expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=len(experts)).permute(2, 1, 0)
        for expert_idx in range(len(experts)):
            expert_layer = experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_hidden_states = expert_layer(hidden_states[top_x]) * routing_weights[top_x, idx][:, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states)
        return final_hidden_states
''')

# transformers 4.36's form: an empty expert skipped, list indices, statements over several lines
MIXTRAL_LISTS = textwrap.dedent('''\
    import torch
    import torch.nn.functional as F


    def moe(hidden_states, router_logits, experts, top_k: int):
        n, hidden_dim = hidden_states.shape
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
        final_hidden_states = torch.zeros(
            (n, hidden_dim), dtype=hidden_states.dtype, device=hidden_states.device
        )
        expert_mask = torch.nn.functional.one_hot(
            selected_experts, num_classes=len(experts)
        ).permute(2, 1, 0)
        for expert_idx in range(len(experts)):
            expert_layer = experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])

            if top_x.shape[0] == 0:
                continue

            # in torch it is faster to index using lists than torch tensors
            top_x_list = top_x.tolist()
            idx_list = idx.tolist()
            current_state = hidden_states[None,
                                          top_x_list].reshape(-1, hidden_dim)
            current_hidden_states = (
                expert_layer(current_state)
                * routing_weights[top_x_list, idx_list, None]
            )
            final_hidden_states.index_add_(
                0, top_x, current_hidden_states.to(hidden_states.dtype))
        return final_hidden_states
''')


def _experts(generator, n_experts: int, dim: int):
    experts = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(dim, 8), torch.nn.SiLU(), torch.nn.Linear(8, dim))
                                  for _ in range(n_experts))
    with torch.no_grad():
        for p in experts.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
    return experts


def _same_steps(before, after, top_k: int, n_experts: int = 4, steps: int = 4):
    generator = torch.Generator().manual_seed(3)
    experts = _experts(generator, n_experts, 6)
    hit_counts = set()
    for step in range(steps):
        rows = 5 + step  # the batch size changes too
        x = torch.randn(rows, 6, generator=generator)
        # logits that leave some experts without tokens on some steps
        logits = torch.randn(rows, n_experts, generator=generator) * (1 + 3 * step)
        hit_counts.add(int((torch.topk(logits, top_k).indices.unique()).numel()))
        results = []
        for function in (before, after):
            xs, ls = x.clone().requires_grad_(), logits.clone().requires_grad_()
            experts.zero_grad()
            out = function(xs, ls, experts, top_k)
            (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
            results.append((out.detach(), xs.grad, ls.grad, [torch.zeros_like(p) if p.grad is None else p.grad.clone()
                                                                       for p in experts.parameters()]))
        (o1, x1, l1, p1), (o2, x2, l2, p2) = results
        torch.testing.assert_close(o2, o1, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(x2, x1, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(l2, l1, rtol=1e-5, atol=1e-6)
        for a, b in zip(p2, p1):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    return hit_counts


@pytest.mark.parametrize("top_k", [1, 2])
def test_mixtral_dispatch_over_hit_experts_runs_densely_with_the_same_outputs_and_gradients(top_k):
    lines = {_line(MIXTRAL, "for expert_idx in expert_hit")}
    new, done = dense_expert_dispatch(MIXTRAL, lines)
    assert done == [_line(MIXTRAL, "for expert_idx")]
    assert "nonzero" not in new and "torch.where" not in new and "index_add_" not in new
    assert new.count("\n") == MIXTRAL.count("\n")
    compile(new, "<new>", "exec")
    hits = _same_steps(load_source(MIXTRAL)["moe"], load_source(new)["moe"], top_k)
    assert min(hits) < 4, "no step left an expert without tokens: the skipped-expert case went untested"


def test_dispatch_over_every_expert_with_where_runs_densely_with_the_same_outputs_and_gradients():
    lines = {_line(MIXTRAL_RANGE, "torch.where")}
    new, done = dense_expert_dispatch(MIXTRAL_RANGE, lines)
    assert done == [_line(MIXTRAL_RANGE, "for expert_idx")]
    assert "torch.where" not in new and "for expert_idx in range(len(experts)):" in new
    _same_steps(load_source(MIXTRAL_RANGE)["moe"], load_source(new)["moe"], top_k=2)


def test_dispatch_with_list_indices_an_empty_expert_skip_and_split_lines_runs_densely_with_the_same_results():
    new, done = dense_expert_dispatch(MIXTRAL_LISTS, {_line(MIXTRAL_LISTS, "torch.where")})
    assert done == [_line(MIXTRAL_LISTS, "for expert_idx")]
    assert "tolist" not in new and "continue" not in new and "torch.where" not in new
    assert new.count("\n") == MIXTRAL_LISTS.count("\n")
    _same_steps(load_source(MIXTRAL_LISTS)["moe"], load_source(new)["moe"], top_k=2)


@pytest.mark.parametrize("use", [
    "final_hidden_states[top_x] += current_hidden_states",  # a write by row index
    "print(top_x.numel())",  # the token count read
])
def test_dispatch_whose_row_index_is_used_otherwise_is_refused(use):
    source = MIXTRAL.replace("        final_hidden_states.index_add_", f"        {use}\n"
                             "        final_hidden_states.index_add_")
    assert use in source
    assert dense_expert_dispatch(source, {_line(source, "for expert_idx")}) == (None, [])


def test_dispatch_not_reported_as_blocking_is_left_alone():
    assert dense_expert_dispatch(MIXTRAL, {1}) == (None, [])


COUNTS = textwrap.dedent('''\
    import torch


    def counts(experts, n: int):
        return torch.bincount(experts.flatten(), minlength=n)
''')


def test_bincount_at_its_minlength_counts_the_same_values_at_the_same_length():
    new, done = bincount_at_minlength(COUNTS, {5})
    assert done == [5] and "bincount" not in new
    before, after = load_source(COUNTS)["counts"], load_source(new)["counts"]
    generator = torch.Generator().manual_seed(1)
    for rows in (0, 1, 7, 30):
        experts = torch.randint(0, 4, (rows, 2), generator=generator)
        expected, got = before(experts, 5), after(experts, 5)
        assert got.dtype == expected.dtype and torch.equal(got, expected)


def test_bincount_with_weights_is_refused():
    source = COUNTS.replace("minlength=n", "weights=None, minlength=n")
    assert bincount_at_minlength(source, {5}) == (None, [])


COUNTER = textwrap.dedent('''\
    import torch


    class Counter:
        def __init__(self):
            self.events = torch.zeros((), dtype=torch.int64)
            self.warn = 1.5

        def step(self, counts, k: int):
            busiest = int(counts.max())
            if busiest > self.warn * counts.sum() / k:
                self.events.add_(1)
            return counts * 2
''')


def test_host_read_deciding_a_device_counter_is_added_on_the_device_with_the_same_count():
    new, done = counted_on_device(COUNTER, {_line(COUNTER, "int(counts.max())")})
    assert done == [_line(COUNTER, "if busiest")] and "int(" not in new and "if busiest" not in new
    assert new.count("\n") == COUNTER.count("\n")
    before, after = load_source(COUNTER)["Counter"](), load_source(new)["Counter"]()
    generator = torch.Generator().manual_seed(2)
    seen = []
    for _ in range(12):
        counts = torch.randint(0, 6, (4,), generator=generator)
        assert torch.equal(before.step(counts, 4), after.step(counts, 4))
        assert int(after.events) == int(before.events)
        seen.append(int(before.events))
    assert 0 < seen[-1] < 12, "the threshold was passed on every step or none: the test proves nothing"


def test_host_read_used_elsewhere_is_refused():
    source = COUNTER.replace("return counts * 2", "return counts * busiest")
    assert counted_on_device(source, {_line(source, "int(counts.max())")}) == (None, [])


@pytest.mark.slow
def test_graph_on_moe_router_routes_densely_and_computes_the_same_outputs_aux_and_gradients(tmp_path):
    from graphsafe.config import Settings
    from graphsafe.graph_command import plan

    target = tmp_path / "moe_router"
    shutil.copytree(CORPUS / "moe_router", target)
    result = plan([target], Settings(root=target), "MoEModel.forward", use_cache=False)
    for path, (_old, new) in result.changed.items():
        Path(path).write_bytes(new)
    blocking = {(d.code, d.message.split("`")[1] if "`" in d.message else "") for d in result.blocking}
    assert not {code for code, _ in blocking} & {"GS105", "GS201"}, blocking
    assert not {what for _, what in blocking} & {"nonzero", "bincount", "torch.where(cond)"}, blocking

    original, graphed = load_model_module(CORPUS / "moe_router", "original"), load_model_module(target, "graphed")
    for training in (True, False):  # the router draws jitter in training: the same draws in both
        torch.manual_seed(0)
        before = original.MoEModel(in_dim=12).train(training)
        torch.manual_seed(0)
        after = graphed.MoEModel(in_dim=12).train(training)
        assert_same_training_steps(before, after, 4, shortest=2, reseed=True)
        assert [int(b.moe.overflow_events) for b in after.blocks] == [b.moe.overflow_events for b in before.blocks]
