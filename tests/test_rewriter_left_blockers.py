"""What `graphsafe graph` rewrites of what still blocks a core (decode_loop's four lines, written
here as small synthetic programs): rows of a mask written with one number (nonzero_rows), a
number attribute's `torch.tensor` (number_attribute), checks on tensors (device_checks).
Differential tests on CPU, original vs rewritten, over several steps with the values changing."""

from __future__ import annotations

import ast
import textwrap

import pytest

from graphsafe.rewriters.boundary import split_region
from graphsafe.rewriters.device_checks import device_checks
from graphsafe.rewriters.fixed_histogram import fixed_histogram
from graphsafe.rewriters.left_blockers import host_reads_left
from graphsafe.rewriters.nonzero_rows import writes_by_mask
from graphsafe.rewriters.number_attribute import tensor_of_attribute
from graphsafe.rewriters.rename_rebound import rename_rebound

torch = pytest.importorskip("torch")


def _load(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace


def _at(source: str, line: int, text: str) -> tuple[int, int]:
    """(line, column from 0) of `text` on a line, as the analyzer reports a span's start."""
    return line, source.splitlines()[line - 1].index(text)


ROWS = textwrap.dedent('''\
    import torch


    def mark(state, done, step: int):
        rows = done.nonzero(as_tuple=True)[0]
        state.lengths[rows] = step
        state.table[rows] = -1.5
        return state.lengths.sum()
''')


class _State:
    def __init__(self, generator):
        self.lengths = torch.randint(0, 9, (6,), generator=generator)
        self.table = torch.randn(6, 3, generator=generator)


@pytest.mark.parametrize("mask_shape", [(6,), (6, 2)])
def test_rows_of_a_mask_written_with_one_number_become_a_where_with_the_same_results(mask_shape):
    at = {_at(ROWS, 5, "done.nonzero")}
    numbers = {_at(ROWS, 6, "step")}
    result = writes_by_mask(ROWS, at, numbers)
    assert result.lines == [6, 7]
    assert "nonzero" not in result.source and result.source.count("\n") == ROWS.count("\n")
    before, after = _load(ROWS)["mark"], _load(result.source)["mark"]
    generator = torch.Generator().manual_seed(0)
    for step in range(5):  # the mask and the number change every step
        done = torch.rand(mask_shape, generator=generator) > 0.6
        a, b = _State(torch.Generator().manual_seed(step)), _State(torch.Generator().manual_seed(step))
        assert torch.equal(before(a, done, step), after(b, done, step))
        assert torch.equal(a.lengths, b.lengths) and torch.equal(a.table, b.table)
        assert a.lengths.dtype == b.lengths.dtype


def test_rows_of_a_mask_are_left_when_used_otherwise_or_written_with_a_value_of_unknown_shape():
    used = ROWS.replace("    return state.lengths.sum()", "    return rows")
    assert writes_by_mask(used, {_at(used, 5, "done.nonzero")}, {_at(used, 6, "step")}).source is None
    # `step` not reported as a Python number: it may be a tensor of one value per row
    assert writes_by_mask(ROWS, {_at(ROWS, 5, "done.nonzero")}, set()).source is None
    changed = ROWS.replace("    state.table[rows] = -1.5", "    done.fill_(True)\n    state.table[rows] = -1.5")
    assert writes_by_mask(changed, {_at(changed, 5, "done.nonzero")}, {_at(changed, 6, "step")}).source is None


ATTENTION = textwrap.dedent('''\
    from dataclasses import dataclass

    import torch


    @dataclass
    class Config:
        width: int = 12
        heads: int = 3


    class Scores:
        def __init__(self, config: Config, scale_bias: float = 0.5):
            self.head_dim = config.width // config.heads
            self.bias = scale_bias * 2
            self.names = [config.width]

        def __call__(self, q, k):
            scale = torch.tensor(self.head_dim, dtype=q.dtype, device=q.device).rsqrt()
            shift = torch.tensor(self.bias)
            listed = torch.tensor(self.names)
            return (q @ k.transpose(-2, -1)) * scale + shift + listed
''')


def test_a_number_attribute_set_in_init_is_filled_on_the_device_with_the_same_values_and_dtype():
    at = {_at(ATTENTION, 19, "torch.tensor"), _at(ATTENTION, 20, "torch.tensor"), _at(ATTENTION, 21, "torch.tensor")}
    source, lines = tensor_of_attribute(ATTENTION, at)
    assert lines == [19, 20]  # a list attribute stays
    assert "torch.full((), self.head_dim, dtype=q.dtype, device=q.device).rsqrt()" in source
    assert "torch.full((), self.bias)" in source and "torch.tensor(self.names)" in source
    before, after = _load(ATTENTION), _load(source)
    generator = torch.Generator().manual_seed(1)
    for width, heads in ((12, 3), (16, 4), (9, 3)):
        old, new = before["Scores"](before["Config"](width, heads)), after["Scores"](after["Config"](width, heads))
        q, k = torch.randn(2, 4, width, generator=generator), torch.randn(2, 4, width, generator=generator)
        expected, got = old(q, k), new(q, k)
        assert torch.equal(expected, got) and expected.dtype == got.dtype


def test_an_attribute_assigned_again_outside_init_is_not_taken_for_a_number():
    again = ATTENTION + "\n\ndef retune(scores, t):\n    scores.head_dim = t\n"
    source, lines = tensor_of_attribute(again, {_at(again, 19, "torch.tensor")})
    assert source is None and lines == []


CHECKS = textwrap.dedent('''\
    import torch


    class Block:
        def __init__(self, layer, checks=True):
            self.layer, self.checks = layer, checks

        def forward(self, x, counter):
            start = counter.pos if counter is not None else 0
            assert start + x.shape[0] <= 8, f"too long: {start + x.shape[0]}"
            y = x * 2
            if self.checks and not torch.isfinite(y).all():
                raise FloatingPointError(f"non-finite after layer {self.layer}")
            return y
''')


class _Counter:
    def __init__(self, pos):
        self.pos = torch.tensor(pos)


def test_checks_on_tensors_stay_checks_on_the_device_and_still_fail_on_bad_values():
    source, lines = device_checks(CHECKS, {_at(CHECKS, 12, "torch.isfinite")}, {("start", "pos")})
    assert lines == [10, 12]
    assert "if self.checks:\n            torch._assert_async(torch.isfinite(y).all(), " \
           "'FloatingPointError: non-finite after layer {self.layer}')" in source
    assert "torch._assert_async(torch.as_tensor(start + x.shape[0] <= 8), 'AssertionError: too long: " \
           "{start + x.shape[0]}')" in source
    assert not host_reads_left(source, "start", "pos") and host_reads_left(CHECKS, "start", "pos")
    before, after = _load(CHECKS)["Block"](1), _load(source)["Block"](1)
    generator = torch.Generator().manual_seed(2)
    for pos in range(4):  # the counter and the input change every step; a counter of None too
        x = torch.randn(3, generator=generator)
        for counter in (_Counter(pos), None):
            assert torch.equal(before.forward(x, counter), after.forward(x, counter))
    with pytest.raises(FloatingPointError):
        before.forward(torch.tensor([float("inf")]), None)
    with pytest.raises(RuntimeError, match="FloatingPointError: non-finite"):
        after.forward(torch.tensor([float("inf")]), None)
    with pytest.raises(RuntimeError, match="AssertionError: too long"):
        after.forward(torch.zeros(3), _Counter(7))
    assert _load(source)["Block"](1, checks=False).forward(torch.tensor([float("nan")]), None).isnan().all()


def test_a_check_whose_test_reads_a_tensor_as_a_bool_or_has_an_else_is_left():
    mixed = CHECKS.replace("assert start + x.shape[0] <= 8,", "assert start >= 0 and start < 8,")
    otherwise = CHECKS.replace('            raise FloatingPointError(f"non-finite after layer {self.layer}")',
                               '            raise FloatingPointError("x")\n        else:\n            pass')
    assert device_checks(mixed, set(), {("start", "pos")}) == (None, [])
    assert device_checks(otherwise, {_at(otherwise, 12, "torch.isfinite")}, set()) == (None, [])
    ast.parse(otherwise)


HISTOGRAM = textwrap.dedent('''\
    import torch


    class Confusion:
        def __init__(self, k):
            self.k = k
            self.matrix = torch.zeros(k, k, dtype=torch.int64)

        def update(self, scores, y):
            p = torch.argmax(scores, dim=1).flatten()
            y = y.flatten()
            keep = (y >= 0) & (y < self.k)
            y = y[keep]
            p = p[keep]
            idx = self.k * y + p
            m = torch.bincount(idx, minlength=self.k**2).reshape(self.k, self.k)
            self.matrix += m.to(self.matrix)
''')


def _histogram_spans(source: str):
    return {_at(source, 16, "torch.bincount")}, {_at(source, 13, "y[keep]"), _at(source, 14, "p[keep]")}


def test_a_histogram_of_masked_values_is_counted_at_a_fixed_size_with_the_same_counts():
    source, lines = fixed_histogram(HISTOGRAM, *_histogram_spans(HISTOGRAM))
    assert lines == [16] and source.count("\n") == HISTOGRAM.count("\n")
    assert "[keep]" not in source and "bincount" not in source
    assert "idx = torch.where(keep, (self.k * y + p), (self.k**2)).flatten()" in source
    before, after = _load(HISTOGRAM)["Confusion"](5), _load(source)["Confusion"](5)
    generator = torch.Generator().manual_seed(3)
    for step in range(6):  # labels change every step, some of them ignored (-1 or out of range)
        shape = (16,) if step % 2 else (4, 3)
        scores = torch.randn(*shape[:1], 5, *shape[1:], generator=generator)
        y = torch.randint(-1, 7, shape, generator=generator)
        before.update(scores, y), after.update(scores, y)
        assert torch.equal(before.matrix, after.matrix) and after.matrix.dtype == torch.int64
    assert before.matrix.sum() > 0


def test_a_histogram_is_left_when_a_filtered_value_is_used_elsewhere_or_weighted():
    used = HISTOGRAM.replace("        self.matrix += m.to(self.matrix)",
                             "        self.matrix += m.to(self.matrix) + y.sum()")
    assert used != HISTOGRAM
    weighted = HISTOGRAM.replace("minlength=self.k**2)", "minlength=self.k**2, weights=None)")
    assert fixed_histogram(used, *_histogram_spans(used)) == (None, [])
    assert fixed_histogram(weighted, *_histogram_spans(weighted)) == (None, [])


METRIC = textwrap.dedent('''\
    import torch


    class Metric:
        def __init__(self):
            self.seen = 0
            self.total = torch.zeros(())

        def update(self, output):
            pred, y = output[0].detach(), output[1].detach()
            self.seen += pred.shape[0]
            pred = torch.argmax(pred, dim=1)
            self.total += (pred == y).sum()
            return pred
''')


def test_a_name_host_work_reads_is_renamed_where_tensor_work_rebinds_it_and_computes_the_same():
    source = rename_rebound(METRIC, "Metric.update", {11: {"GS302"}})
    assert "pred_1 = torch.argmax(pred, dim=1)" in source and "(pred_1 == y)" in source and "return pred_1" in source
    assert "self.seen += pred.shape[0]" in source and source.count("\n") == METRIC.count("\n")
    before, after = _load(METRIC)["Metric"](), _load(source)["Metric"]()
    generator = torch.Generator().manual_seed(4)
    for batch in (5, 7, 3):
        output = (torch.randn(batch, 4, generator=generator), torch.randint(0, 4, (batch,), generator=generator))
        assert torch.equal(before.update(output), after.update(output))
        assert before.seen == after.seen and torch.equal(before.total, after.total)
    # split afterwards, the counter moves after the core (it no longer crosses the rebinding)
    split = split_region(source, "Metric.update", {11: {"GS302"}})
    assert split.source is not None and split.epilogue_lines == [11]


def test_a_name_is_not_renamed_where_a_closure_or_a_branch_would_see_another_variable():
    closure = METRIC.replace("        return pred\n", "        return lambda: pred\n")
    branch = METRIC.replace("        self.seen += pred.shape[0]\n",
                            "        self.seen += pred.shape[0]\n        if y is None:\n            pred = y\n")
    assert rename_rebound(closure, "Metric.update", {11: {"GS302"}}) is None
    assert rename_rebound(branch, "Metric.update", {11: {"GS302"}}) is None
    assert rename_rebound(METRIC, "Metric.update", {}) is None  # no host work reads it
