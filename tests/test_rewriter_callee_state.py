"""Callee state under `graphsafe graph` (rewriters/device_counter.py, number_tensor.py,
callee_state.py): differential tests, original vs rewritten, over several steps with the per-step
values changing, on CPU."""

from __future__ import annotations

import textwrap

import pytest

from graphsafe.rewriters.device_counter import device_counter
from graphsafe.rewriters.number_tensor import tensor_from_number

torch = pytest.importorskip("torch")

NORM = textwrap.dedent('''\
    import torch
    import torch.nn as nn


    class RunningNorm(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.register_buffer("mean", torch.zeros(dim))
            self.count = 1e-4
            self.calls = 0

        def forward(self, x):
            n = x.shape[0]
            total = self.count + n
            self.mean += (x.mean(0) - self.mean) * n / total
            self.count = total
            self.calls += 1
            seen = self.calls
            return (x - self.mean) * seen, f"{self.calls}"
''')

SCHEDULER = textwrap.dedent('''\
    import torch


    class Scheduler:
        def __init__(self, n, device=None):
            self.table = torch.linspace(0.1, 1.0, n, device=device)
            self.step_index = 0

        def reset(self):
            self.step_index = 0

        def step(self, x):
            self.step_index += 1
            return x * self.table[-1] + self.step_index * 0.5
''')


def _load(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace


def test_device_counter_of_a_module_advances_every_call_like_the_python_counter():
    result = device_counter(NORM, "RunningNorm", "count")
    assert result.refusal is None
    result = device_counter(result.source, "RunningNorm", "calls")
    assert result.refusal is None and result.host_reads == [19]  # the f-string reads it with .item()
    assert 'register_buffer("count", torch.tensor(1e-4, dtype=torch.float64), persistent=False)' in result.source
    assert "self.count.fill_(total)" in result.source and "self.calls.add_(1)" in result.source
    assert "seen = self.calls.clone()" in result.source
    before, after = _load(NORM)["RunningNorm"](3), _load(result.source)["RunningNorm"](3)
    generator = torch.Generator().manual_seed(0)
    for rows in (2, 5, 1, 4, 3):  # the per-step batch size changes
        x = torch.randn(rows, 3, generator=generator)
        (want, want_tag), (got, got_tag) = before(x), after(x)
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-7)
        assert got_tag == want_tag
    assert float(after.count) == pytest.approx(before.count, rel=1e-12)
    assert after.calls.item() == before.calls == 5
    assert "count" not in after.state_dict()  # not persistent: checkpoints keep their keys


def test_device_counter_of_a_plain_class_lives_on_its_device_parameter_and_resets_in_place():
    result = device_counter(SCHEDULER, "Scheduler", "step_index")
    assert result.refusal is None
    assert "self.step_index = torch.tensor(0, dtype=torch.int64, device=device)" in result.source
    assert "self.step_index.fill_(0)" in result.source
    before, after = _load(SCHEDULER)["Scheduler"](4), _load(result.source)["Scheduler"](4)
    counter = after.step_index  # the same tensor every call: what a replay reads
    for i in range(6):
        if i == 3:
            before.reset(), after.reset()
        x = torch.full((2,), float(i))
        torch.testing.assert_close(after.step(x), before.step(x))
    assert after.step_index is counter and after.step_index.item() == before.step_index


def test_device_counter_refuses_a_slice_bound_with_its_line():
    source = textwrap.dedent('''\
        import torch
        import torch.nn as nn


        class Cache(nn.Module):
            def __init__(self):
                super().__init__()
                self.pos = 0

            def update(self, k):
                self.pos += k.size(0)
                return k[: self.pos]
    ''')
    result = device_counter(source, "Cache", "pos")
    assert result.source is None
    assert result.refusal.startswith("line 12: `self.pos` bounds a slice")


def test_device_counter_refuses_a_class_with_no_device_to_hold_it():
    source = "import torch\n\n\nclass C:\n    def __init__(self):\n        self.n = 0\n\n    def f(self):\n        self.n += 1\n"
    result = device_counter(source, "C", "n")
    assert result.source is None and "no device" in result.refusal


@pytest.mark.parametrize("data", ["[t] * x.shape[0]", "x.shape[0] * [t]", "[t]", "t"])
def test_tensor_from_a_per_step_number_is_the_same_tensor_from_a_number_or_a_device_scalar(data):
    source = f"import torch\n\n\ndef embed(x, t):\n    return torch.tensor({data}, device=x.device) * 2\n"
    new, why = tensor_from_number(source, 5, {"t"})
    assert why is None and "torch.as_tensor(t, device=x.device)" in new
    original, rewritten = _load(source)["embed"], _load(new)["embed"]
    x = torch.zeros(3, 2)
    for t in (7, 3, 0, 9):  # the per-step number changes; graphed passes it as a 0-dim int64 tensor
        want = original(x, t)
        for given in (t, torch.tensor(t)):
            got = rewritten(x, given)
            assert got.dtype == want.dtype and torch.equal(got, want)
    scalar = torch.tensor(5)
    rewritten(x, scalar).add_(1)
    assert scalar.item() == 5  # a fresh tensor, as torch.tensor made one


def test_tensor_from_number_keeps_a_float_dtype_and_refuses_other_forms():
    source = "import torch\n\n\ndef f(x, lr):\n    return torch.tensor([lr, lr], device=x.device)\n"
    new, why = tensor_from_number(source, 5, {"lr"})
    assert new is None and why.startswith("line 5: no `torch.tensor(...)`")
    source = "import torch\n\n\ndef f(x, lr):\n    return torch.tensor([lr], dtype=torch.float64)\n"
    new, _ = tensor_from_number(source, 5, {"lr"})
    got = _load(new)["f"](None, torch.tensor(0.25, dtype=torch.float32))
    assert got.dtype == torch.float64 and got.tolist() == [0.25]


CACHE_ON_DEVICE = """
import torch


class Cache(torch.nn.Module):
    def __init__(self, n: int, device=None):
        super().__init__()
        self.register_buffer("k", torch.zeros(n, device=device), persistent=False)
        self.pos = 0

    def update(self, x):
        self.pos += 1
        return x + self.pos
"""


def test_device_counter_of_a_module_built_on_its_device_is_created_on_that_device():
    # a module made with `device=` is never moved by `.to()`: a CPU counter would be a host copy
    # inside the captured step (decode_loop's KVCache.pos failed capture on an H100 so)
    result = device_counter(CACHE_ON_DEVICE, "Cache", "pos")
    assert 'register_buffer("pos", torch.tensor(0, dtype=torch.int64, device=device), persistent=False)' in result.source
    namespace: dict = {}
    exec(compile(result.source, "cache.py", "exec"), namespace)
    cache = namespace["Cache"](4, device=torch.device("cpu"))
    assert cache.pos.device == torch.device("cpu") and int(cache.pos) == 0
