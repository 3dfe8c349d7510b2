"""A store into a Python container inside a region (`self.nodes[i] = v` on a list built as
`[0.0] * n`) is GS503's change of a container that outlives the call; the per-step Python index
it uses selects a host slot, not device work, so it is no GS301 graph input. Indexes that do
reach device work on the same shapes stay GS301."""

from __future__ import annotations

import textwrap

from graphsafe.analyzer.grouping import each_use
from tests.helpers import diagnostics

TREE = textwrap.dedent("""\
    import torch


    class Tree:
        def __init__(self, n: int):
            self.capacity = n
            self.nodes = [0.0] * (2 * n)
            self.slots = n * [None] + [0]
            self.lrs = [0.1, 0.01]

        def set(self, index: int, value: float) -> None:
            node = index + self.capacity
            self.nodes[node] = value
            self.nodes[node // 2] = self.nodes[node] + self.nodes[node ^ 1]
            self.slots[index] += 1

        def step(self, x: torch.Tensor, opt, i: int):  # graphsafe: region
            self.set(i, 1.0)
            for group in opt.param_groups:
                group["lr"] = self.lrs[i]
            w = self.nodes[i]
            return x * w + x[i]
""")


def _found() -> list[tuple[str, int, int]]:
    return [(d.code, d.start.line, d.start.column) for d in each_use(diagnostics(TREE))]


def test_stores_into_lists_built_by_repetition_are_container_changes():
    # (and the region's call of `set`, a helper whose own work is those stores: host_effect_helpers.py)
    assert [(c, line) for c, line, _ in _found() if c == "GS503"] == [
        ("GS503", 13), ("GS503", 14), ("GS503", 15), ("GS503", 18)]


def test_host_container_stores_are_not_python_scalar_inputs():
    assert [line for c, line, _ in _found() if c == "GS301" and line in (13, 14, 15)] == []


def test_indexes_that_reach_device_work_stay_python_scalar_inputs():
    # the optimizer's lr from a Python list, a list value in tensor math, a tensor index
    assert sorted({line for c, line, _ in _found() if c == "GS301"}) == [20, 21, 22]


def test_a_list_repetition_made_in_the_call_is_not_a_lasting_container():
    source = TREE.replace("        self.set(i, 1.0)\n", "        local = [0.0] * 4\n        local[i] = 1.0\n")
    assert source != TREE
    assert [c for c, _, _ in diagnostics_of(source) if c == "GS503"] == []


def diagnostics_of(source: str) -> list[tuple[str, int, int]]:
    return [(d.code, d.start.line, d.start.column) for d in diagnostics(source)]


HISTORY = textwrap.dedent("""\
    import torch


    class History(list):
        def new_batch(self):
            self[-1]["batches"].append({})

        def record_batch(self, attr, value):
            self[-1]["batches"][-1][attr] = value


    class Frame:
        def __getitem__(self, key):
            return key

        def __setitem__(self, key, value):
            pass

        def put(self, value):
            self[0] = value


    class Net:
        def __init__(self):
            self.history = History()
            self.frame = Frame()

        def step(self, x: torch.Tensor):  # graphsafe: region
            self.history.new_batch()
            self.history.record_batch("loss", 1.0)
            self.frame.put(x)
            return x * 2
""")


def test_items_of_a_container_subclass_changed_through_self_are_state_that_outlives_the_call():
    # `class History(list)`: `self[-1][...]` is the history itself; a class of its own with
    # `__setitem__` (Frame) is not known to be a Python container
    found = sorted((d.code, d.start.line) for d in each_use(diagnostics(HISTORY)) if d.code == "GS503")
    # (and the region's calls of the history's methods, helpers whose own work is those changes)
    assert found == [("GS503", 6), ("GS503", 9), ("GS503", 29), ("GS503", 30)]
