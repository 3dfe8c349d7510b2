"""Differential tests (CPU) for the fixes that are not rewriters of their own module: GS401's
`.copy_()`, GS407's `.clone()`, GS110's device-side check or `error_if_nonfinite=False`, GS603's
`preserve_rng_state=False`, and the statement removals (GS106 synchronize, GS101/GS104 logging).

Each test applies graphsafe's fix to a program, then executes the original and the fixed
statement(s) on random CPU tensors (NaN/inf included) and compares, bitwise (`torch.equal`
with NaNs equal) since the ops are the same. The fixes that need CUDA to run at all
(`capturable=True`, `cache_enabled=False`, a real graph replay) are in
test_rewriter_equivalence_cuda.py.
"""

from __future__ import annotations

import contextlib
import io
import textwrap

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphsafe.config import Settings
from graphsafe.fixer import fix_text

pytestmark = pytest.mark.slow  # property tests that run rewritten code with torch

values = st.one_of(st.floats(-4, 4, width=32), st.sampled_from([0.0, -0.0, float("nan"), float("inf"), float("-inf")]))
rows = st.lists(values, min_size=6, max_size=6).map(lambda v: torch.tensor(v).reshape(2, 3))


def fix(source: str, unsafe: bool) -> str:
    text = "import torch\n" + textwrap.dedent(source)
    outcome = fix_text(text, "case.py", Settings(), [], unsafe=unsafe)
    assert outcome.error is None
    assert outcome.fixed != text, "no fix was applied"
    return outcome.fixed


def changed_lines(source: str, unsafe: bool) -> tuple[str, str]:
    """The one line the fix changed, before and after, without indentation."""
    before = ("import torch\n" + textwrap.dedent(source)).splitlines()
    after = fix(source, unsafe).splitlines()
    assert len(before) == len(after)
    pairs = [(a.strip(), b.strip()) for a, b in zip(before, after) if a != b]
    assert len(pairs) == 1, pairs
    return pairs[0]


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(
        a.nan_to_num(7.0, 8.0, 9.0), b.nan_to_num(7.0, 8.0, 9.0)) and torch.equal(a.isnan(), b.isnan())


REBIND = """
    def main(model, loader):
        static_x = torch.zeros(2, 3)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = model(static_x)
        for batch in loader:
            static_x = batch * 2.0
            g.replay()
"""


@settings(max_examples=60, deadline=None)
@given(old=rows, new=rows)
def test_copy_fix_gives_the_name_the_new_values_in_the_buffer_the_graph_reads(old, new):
    """GS401: after `static_x.copy_(v)` the name holds bitwise the values `static_x = v` gave
    it (same shape and dtype), and they are in the buffer the graph captured."""
    original, fixed = changed_lines(REBIND, unsafe=True)
    assert fixed == "static_x.copy_(batch * 2.0)"
    results = []
    for line in (original, fixed):
        captured = old.clone()
        namespace = {"static_x": captured, "batch": new, "torch": torch}
        exec(line, namespace)
        results.append((namespace["static_x"], captured))
    (rebound, stale), (copied, buffer) = results
    assert same(rebound, copied)
    assert copied is buffer and same(buffer, new * 2.0)  # the graph now reads the new batch
    assert same(stale, old)  # what the unfixed code left in the captured buffer


KEPT = """
    def main(x: torch.Tensor):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = x * 2
        outs = []
        for _ in range(3):
            g.replay()
            outs.append(out)
        return outs
"""


@settings(max_examples=60, deadline=None)
@given(first=rows, second=rows)
def test_clone_fix_keeps_the_value_seen_at_append(first, second):
    """GS407: `outs.append(out.clone())` keeps bitwise the appended values after the static
    output is overwritten (as the next replay does); the unfixed list entry changes with it."""
    original, fixed = changed_lines(KEPT, unsafe=False)
    assert fixed == "outs.append(out.clone())"
    kept = []
    for line in (original, fixed):
        out = first.clone()
        namespace = {"out": out, "outs": []}
        exec(line, namespace)
        out.copy_(second)  # the next replay writes into the same output tensor
        kept.append(namespace["outs"][0])
    assert same(kept[1], first)
    assert same(kept[0], second)


CLIP = """
    def step(model: torch.nn.Module, x: torch.Tensor):  # graphsafe: region
        loss = model(x).sum()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
        return norm
"""


def _load(source: str, name: str):
    namespace: dict = {}
    exec(compile(source, "case.py", "exec"), namespace)
    return namespace[name]


CLIP_IN_EXPRESSION = """
    def step(model: torch.nn.Module, x: torch.Tensor):  # graphsafe: region
        loss = model(x).sum()
        loss.backward()
        return 2 * torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
"""


def _clip_runs(source_text: str, x: torch.Tensor) -> list:
    """(norm, grads) of the original and the fixed step, or the exception each raised."""
    runs = []
    for source in ("import torch\n" + textwrap.dedent(source_text), fix(source_text, unsafe=True)):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        try:
            norm = _load(source, "step")(model, x)
        except RuntimeError as error:
            runs.append(error)
            continue
        runs.append((norm, [p.grad.clone() for p in model.parameters()]))
    return runs


@settings(max_examples=60, deadline=None)
@given(x=rows)
def test_device_side_nonfinite_check_keeps_norm_and_grads_and_still_raises(x):
    """GS110 (unsafe): `torch._assert_async(torch.isfinite(norm))` after the call. With a finite
    norm, norm and clipped gradients are bitwise equal; with a non-finite norm both raise (the
    fixed code after scaling the gradients: the documented difference)."""
    assert "torch._assert_async(torch.isfinite(norm)" in fix(CLIP, unsafe=True)
    original, fixed = _clip_runs(CLIP, x)
    if isinstance(original, RuntimeError):
        assert isinstance(fixed, RuntimeError) and "non-finite" in str(fixed)
        return
    assert not isinstance(fixed, RuntimeError)
    assert same(original[0], fixed[0])
    assert all(same(a, b) for a, b in zip(original[1], fixed[1]))


@settings(max_examples=40, deadline=None)
@given(x=rows)
def test_error_if_nonfinite_off_keeps_norm_and_grads_when_finite(x):
    """GS110 where the norm is used inside an expression: the check is turned off (unsafe).
    Finite: bitwise equal; non-finite: the original raises, the fixed code returns the norm."""
    assert "error_if_nonfinite=False" in fix(CLIP_IN_EXPRESSION, unsafe=True)
    original, fixed = _clip_runs(CLIP_IN_EXPRESSION, x)
    if isinstance(original, RuntimeError):
        assert not torch.isfinite(fixed[0])
        return
    assert same(original[0], fixed[0])
    assert all(same(a, b) for a, b in zip(original[1], fixed[1]))


CHECKPOINT = """
    def step(block: torch.nn.Module, x: torch.Tensor):  # graphsafe: region
        y = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        y.sum().backward()
        return y
"""


@settings(max_examples=40, deadline=None)
@given(x=rows)
def test_preserve_rng_state_off_keeps_values_of_a_deterministic_block(x):
    """GS603 (unsafe): a block without randomness gives bitwise equal outputs and gradients.
    With dropout in the block the recomputed mask may differ (why the fix is unsafe)."""
    original = "import torch\n" + textwrap.dedent(CHECKPOINT)
    fixed = fix(CHECKPOINT, unsafe=True)
    assert "preserve_rng_state=False" in fixed
    runs = []
    for source in (original, fixed):
        torch.manual_seed(0)
        block = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.GELU(), torch.nn.Linear(4, 3))
        xin = x.clone().requires_grad_(True)
        y = _load(source, "step")(block, xin)
        runs.append((y.detach(), xin.grad, [p.grad for p in block.parameters()]))
    (y0, g0, p0), (y1, g1, p1) = runs
    assert same(y0, y1) and same(g0, g1) and all(same(a, b) for a, b in zip(p0, p1))


REMOVALS = {
    "synchronize (GS106)": """
        def step(x: torch.Tensor):  # graphsafe: region
            y = x * 2 + 1
            torch.cuda.synchronize()
            return y.exp()
    """,
    "print of .item() (GS101)": """
        def step(x: torch.Tensor):  # graphsafe: region
            y = x.abs().sum()
            print(y.item())
            return y / 3
    """,
    "f-string log (GS104)": """
        import logging
        log = logging.getLogger(__name__)

        def step(x: torch.Tensor):  # graphsafe: region
            y = x.clamp(-1, 1)
            log.warning(f"y {y}")
            return y
    """,
}


@pytest.mark.parametrize("name", sorted(REMOVALS))
@settings(max_examples=30, deadline=None)
@given(x=rows)
def test_removed_statement_did_not_contribute_to_the_results(name, x):
    """Removals (unsafe: the program no longer syncs or logs) leave bitwise equal results.
    The original's `torch.cuda.synchronize` is a no-op stand-in here (no CUDA on CPU)."""
    original = "import torch\n" + textwrap.dedent(REMOVALS[name])
    fixed = fix(REMOVALS[name], unsafe=True)
    assert len(fixed.splitlines()) == len(original.splitlines()) - 1
    saved = torch.cuda.synchronize
    torch.cuda.synchronize = lambda *a, **k: None
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            expected = _load(original, "step")(x.clone())
    finally:
        torch.cuda.synchronize = saved
    got = _load(fixed, "step")(x.clone())
    assert same(expected, got)


def test_copy_fix_never_copies_a_non_tensor():
    """Found on the torch package tree: `self._tracker = None` after a capture became
    `self._tracker.copy_(None)`. Releasing an attribute is not reported; a literal never gets
    the `.copy_()` fix."""
    source = """
        class G:
            def __init__(self):
                self.buf = torch.zeros(2)
                self.n = torch.zeros(2)

            def capture(self):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = self.buf * 2 + self.n
                return y

            def reset(self):
                self.buf = None

            def count(self):
                self.n = 3
    """
    text = "import torch\n" + textwrap.dedent(source)
    outcome = fix_text(text, "case.py", Settings(), [], unsafe=True)
    assert outcome.error is None and ".copy_(" not in outcome.fixed


ASSERT = """
    def step(x: torch.Tensor):  # graphsafe: region
        assert (x > -3).all(), "value below -3"
        return x * 2
"""
ASSERT_FSTRING = """
    LIMIT = -3

    def step(x: torch.Tensor):  # graphsafe: region
        assert (x > LIMIT).all(), f"value below {LIMIT}"
        return x * 2
"""
ASSERT_FIXED = {ASSERT: 'torch._assert_async((x > -3).all(), "value below -3")',
                ASSERT_FSTRING: 'torch._assert_async((x > LIMIT).all(), f"value below {LIMIT}")'}


@settings(max_examples=60, deadline=None)
@given(x=rows, source=st.sampled_from([ASSERT, ASSERT_FSTRING]))
def test_tensor_assert_becomes_a_device_side_check(x, source):
    """GS201 `assert t, "msg"` → `torch._assert_async(t, "msg")` (unsafe): a true condition gives
    the same result bitwise; a false one raises in both (AssertionError before, RuntimeError
    with the same message after: the documented difference). An f-string message of Python
    values is kept as is."""
    fixed = fix(source, unsafe=True)
    assert ASSERT_FIXED[source] in fixed
    outcomes = []
    for source in ("import torch\n" + textwrap.dedent(source), fixed):
        try:
            outcomes.append(_load(source, "step")(x))
        except (AssertionError, RuntimeError) as error:
            outcomes.append(error)
    original, rewritten = outcomes
    if isinstance(original, AssertionError):
        assert isinstance(rewritten, RuntimeError) and "value below -3" in str(rewritten)
    else:
        assert not (x <= -3).any() and same(original, rewritten)


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**62, 2**62), st.booleans()),
       dtype=st.sampled_from([torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64, torch.int32,
                              torch.bool, None]))
def test_scalar_tensor_becomes_a_device_fill_with_the_same_value_and_dtype(value, dtype):
    """GS402 `torch.tensor(<number>, dtype=..., device=...)` → `torch.full((), <number>, ...)`
    (unsafe): bitwise the same value and dtype for Python numbers; the one difference, which is
    why it is unsafe, is that `torch.full` raises for a number outside the dtype's range where
    `torch.tensor` rounds it (a float beyond the dtype's max, an int beyond int32)."""
    region = ("def make(value: float, x: torch.Tensor):  # graphsafe: region\n"
              f"    return torch.tensor(value{', dtype=dtype' if dtype is not None else ''}, device=x.device)\n")
    fixed = fix(region, unsafe=True)
    assert "torch.full((), value" in fixed
    results = []
    for text in ("import torch\n" + region, fixed):
        namespace = {"dtype": dtype}
        exec(compile(text, "case.py", "exec"), namespace)
        try:
            results.append(namespace["make"](value, torch.zeros(1)))
        except (RuntimeError, OverflowError) as error:
            results.append(type(error))
    original, rewritten = results
    if isinstance(original, type):
        assert isinstance(rewritten, type)
        return
    if isinstance(rewritten, type):  # the documented difference: out of the dtype's range
        made = original.dtype  # the dtype torch.tensor gave (explicit, or inferred from the number)
        info = torch.finfo(made) if made.is_floating_point else torch.iinfo(made) if made != torch.bool else None
        assert info is not None and not (info.min <= value <= info.max), (value, dtype)
        return
    assert rewritten.shape == () and same(original, rewritten)


@pytest.mark.parametrize("value", ["cfg.weights", "[t] * x.shape[0]", "self.scale", "values + [1.0]"])
def test_no_device_fill_for_values_that_may_be_lists(value):
    text = ("import torch\n\n\ndef make(cfg, t, values, x: torch.Tensor):  # graphsafe: region\n"
            f"    return torch.tensor({value}, device=x.device)\n")
    outcome = fix_text(text, "case.py", Settings(), [], unsafe=True)
    assert outcome.error is None and "torch.full" not in outcome.fixed


@settings(max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=2, max_size=3),
       index=st.sampled_from(["[-1]", "[0]", "[2]", "[-3]", "[0, 1]", "[1, 2, 3]"]),
       position=st.sampled_from(["{}", ":, {}", "..., {}"]))
def test_literal_list_index_becomes_the_slice_with_the_same_values_and_shape(shape, index, position):
    """GS402 `v[:, [-1]]` → `v[:, -1:]` (unsafe: a view, where the list made a copy): every
    input the list index accepts gives the same values, shape and dtype through the slice."""
    subscript = position.format(index)
    region = f"def pick(v: torch.Tensor):  # graphsafe: region\n    return v[{subscript}]\n"
    fixed = fix(region, unsafe=True)
    assert "[" + index not in fixed.split("return ")[1][1:]  # the list itself is gone
    v = torch.arange(float(torch.Size(shape).numel())).reshape(shape)
    outcomes = []
    for text in ("import torch\n" + region, fixed):
        namespace: dict = {}
        exec(compile(text, "case.py", "exec"), namespace)
        try:
            outcomes.append(namespace["pick"](v))
        except IndexError as error:
            outcomes.append(error)
    original, rewritten = outcomes
    if isinstance(original, IndexError):
        return  # out of range: the list refused it (the slice gives an empty tensor); documented
    size = shape[-1] if position == "..., {}" else shape[1] if position == ":, {}" else shape[0]
    if not all(-size <= k < size for k in eval(index)):
        # the documented difference: a tensor with no elements takes an out-of-range list index
        # (nothing to check), keeping a dimension the slice leaves empty
        assert v.numel() == 0 and isinstance(rewritten, torch.Tensor)
        return
    assert isinstance(rewritten, torch.Tensor) and same(original, rewritten)


def test_no_slice_for_lists_no_slice_selects():
    text = "import torch\n\n\ndef pick(v: torch.Tensor):  # graphsafe: region\n    return v[:, [0, 2]], v[[2, 0]], v[[-2, -1]]\n"
    outcome = fix_text(text, "case.py", Settings(), [], unsafe=True)
    assert outcome.error is None and outcome.fixed == text
