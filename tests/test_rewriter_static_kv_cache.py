"""The static KV cache (rewriters/static_kv_cache.py) and the reads of its position outside its
class (callee_state._outside_reads, number_gather's arange): differential tests on CPU, a prefill
of several positions then one-position decode steps, the cache's position a Python int (before
device_counter) and a 0-dim device counter (after), against the prefix-slicing original."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphsafe.rewriters.device_counter import device_counter
from graphsafe.rewriters.number_gather import gather_by_number
from graphsafe.rewriters.static_kv_cache import static_kv_cache

torch = pytest.importorskip("torch")

MODEL = textwrap.dedent('''\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Cache(nn.Module):
        def __init__(self, heads, max_len, dim):
            super().__init__()
            self.register_buffer("keys", torch.zeros(1, heads, max_len, dim))
            self.register_buffer("values", torch.zeros(1, heads, max_len, dim))
            self.filled = 0

        def reset(self):
            self.filled = 0

        def append(self, k, v):
            n = k.shape[2]
            self.keys[:, :, self.filled : self.filled + n] = k
            self.values[:, :, self.filled : self.filled + n] = v
            self.filled += n
            return self.keys[:, :, : self.filled], self.values[:, :, : self.filled]


    class Attention(nn.Module):
        def __init__(self, heads=2, dim=4):
            super().__init__()
            self.heads, self.dim = heads, dim
            self.qkv = nn.Linear(heads * dim, 3 * heads * dim)

        def forward(self, x, cache=None):
            B, T, C = x.size()
            q, k, v = (t.view(B, T, self.heads, self.dim).transpose(1, 2) for t in self.qkv(x).split(C, dim=2))
            if cache is not None:
                k, v = cache.append(k, v)
            att = (q @ k.transpose(-2, -1)) / self.dim**0.5
            if T > 1:
                L = k.size(2)
                causal = torch.ones(T, L, dtype=torch.bool).tril(diagonal=L - T)
                att = att.masked_fill(~causal, float("-inf"))
            att = F.softmax(att, dim=-1)
            return (att @ v).transpose(1, 2).reshape(B, T, C)


    def positions(cache, T):
        start = cache.filled if cache is not None else 0
        assert start + T <= 16
        return torch.arange(start, start + T, dtype=torch.long)
''')


def _load(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace


def _decode(namespace: dict) -> list:
    """A prefill of 5 positions, then 6 one-position steps, then a reset and a second request."""
    torch.manual_seed(0)
    attention, cache = namespace["Attention"](), namespace["Cache"](2, 16, 4)
    generator = torch.Generator().manual_seed(1)
    outputs = []
    for request in range(2):
        cache.reset()
        outputs.append(attention(torch.randn(1, 5 - request, 8, generator=generator), cache))
        for _ in range(6):
            outputs.append(attention(torch.randn(1, 1, 8, generator=generator), cache))
    outputs.append(attention(torch.randn(1, 3, 8, generator=generator)))  # no cache: the causal path as before
    return outputs


def test_static_cache_attends_to_exactly_the_prefix_the_slices_did():
    result = static_kv_cache({"m.py": MODEL}, "m.py", "Cache", "filled")
    assert result.refusal is None and result.method == "append"
    source = result.sources["m.py"]
    assert "self.keys.index_copy_(2, at, k)" in source and "self.values.index_copy_(2, at, v)" in source
    assert "return self.keys, self.values, torch.arange(self.keys.size(2), device=self.keys.device) <= " \
           "at.unsqueeze(-1)" in source
    assert "k, v, visible = cache.append(k, v)" in source and "visible = None" in source
    assert 'if visible is not None:\n            att = att.masked_fill(~visible, float("-inf"))\n' \
           '        att = F.softmax(att, dim=-1)' in source
    want = _decode(_load(MODEL))
    counter = device_counter(source, "Cache", "filled")  # then the position is a device counter
    assert counter.refusal is None, counter.refusal
    for rewritten in (source, counter.source):
        got = _decode(_load(rewritten))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)  # sums over the full buffer may round apart


def test_arange_from_a_position_becomes_a_sum_and_the_assert_is_a_host_read():
    lines = MODEL.splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "torch.arange(start" in text)
    column = lines[line - 1].index("start,")
    result = gather_by_number(MODEL, {(line, column), (line, column + len("start, "))})
    assert result.lines == [line] and result.refused == []
    assert "return (start + torch.arange(T, dtype=torch.long)).to(torch.long)" in result.source
    before, after = _load(MODEL)["positions"], _load(result.source)["positions"]
    for start in (0, 3, torch.tensor(7)):  # a number, and the device counter's 0-dim tensor
        cache = type("C", (), {"filled": start})()
        want = before(cache, 4) if not isinstance(start, torch.Tensor) else torch.arange(7, 11)
        got = after(cache, 4)
        assert got.dtype == torch.long and torch.equal(got, want)


CAUSAL = """\
        if T > 1:
            L = k.size(2)
            causal = torch.ones(T, L, dtype=torch.bool).tril(diagonal=L - T)
            att = att.masked_fill(~causal, float("-inf"))
"""


@pytest.mark.parametrize("old, new, why", [
    (CAUSAL, "", "no causal mask block"),  # without it only one new position at a time would be equal
    ("return (att @ v)", "return (att @ v + v.mean())", "otherwise than `att @ values`"),
    ("self.filled += n\n", "pass\n", "between the cache's writes and its return"),
    ("k, v = cache.append(k, v)", "kv = cache.append(k, v)", "not unpacked"),
])
def test_static_cache_refuses_what_it_cannot_prove_with_the_line(old, new, why):
    assert old in MODEL
    result = static_kv_cache({"m.py": MODEL.replace(old, new)}, "m.py", "Cache", "filled")
    assert result.sources is None and why in result.refusal and result.refusal.startswith("m.py:")


def test_static_cache_refuses_another_call_of_the_method_name_it_cannot_prove():
    other = "def merge(a, b):\n    a.append(b)\n    return a\n"
    result = static_kv_cache({"m.py": MODEL, "other.py": other}, "m.py", "Cache", "filled")
    assert result.sources is None and result.refusal.startswith("other.py:2:")


@pytest.mark.slow
def test_graph_on_decode_loop_makes_its_cache_static_and_leaves_nothing_blocking(tmp_path):
    """corpus/decode_loop through `graphsafe graph` alone: the KV cache is static and its position
    a device counter; what still blocks capture is listed with its line (issue 20, point 4), and
    the program computes the original's numbers on CPU."""
    import shutil

    from graphsafe.config import Settings
    from graphsafe.graph_command import plan
    from tests import finish, golden_fix, program_runner

    program = finish.CORPUS / "decode_loop"
    target = tmp_path / "decode_loop"
    shutil.copytree(program, target, ignore=shutil.ignore_patterns(*finish.NOT_CODE))
    result = plan([target], Settings(root=target), "decode_step", use_cache=False)
    for path, (_old, new) in result.changed.items():
        Path(path).write_bytes(new)
    assert any("KVCache.update writes its fixed-size buffers" in c for c in result.callee_changes)
    assert any("KVCache.pos is a device counter" in c for c in result.callee_changes)
    left = sorted(f"{Path(d.path).name}:{d.start.line} {d.code}" for d in result.blocking)
    # the nonzero, the scale's torch.tensor, the raise and the assert on the position: rewritten too
    # (tests/test_rewriter_left_blockers.py), nothing is left
    assert left == [] and result.callee_refusals == []
    assert golden_fix.different_numbers(program_runner.corpus_result(program), golden_fix.run_program(target),
                                        rel=1e-6, abs_=1e-9) == []


def test_reads_of_a_counter_outside_its_class_are_rewritten_or_listed_as_host_reads(tmp_path):
    from graphsafe.model import Diagnostic, Position
    from graphsafe.rewriters.callee_state import CalleeState, Sources, _outside_reads

    user = tmp_path / "user.py"
    user.write_text(textwrap.dedent('''\
        import torch


        def step(x, cache):
            start = cache.pos
            if start > 3:
                x = x * 2
            ids = torch.arange(start, start + 2, device=x.device)
            return x + start + torch.zeros(cache.pos).sum() + ids.sum()
    '''))
    at = Position(5, 12)

    def use(line: int, column: int) -> Diagnostic:
        return Diagnostic("GS301", "x", str(user), Position(line, column), Position(line, column))

    counter = "`self.pos` is a Python counter updated only while capturing"
    diagnostics = [Diagnostic("GS302", counter, "cache.py", at, at),
                   Diagnostic("GS301", "attribute `pos` of Cache is a Python number read once at capture", str(user),
                              Position(8, 23), Position(8, 28),
                              also=(use(8, 30), use(6, 7), use(9, 15), use(9, 35)))]
    outcome = CalleeState()
    reads = _outside_reads(diagnostics, Sources([user]), outcome)
    assert "ids = start + torch.arange(2, device=x.device)" in user.read_text()
    assert sorted(r.split(": ")[0].rsplit(":", 1)[-1] for r in reads[("Cache", "pos")]) == ["6", "9"]
    assert all("host" in r for r in reads[("Cache", "pos")])
