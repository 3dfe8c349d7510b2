"""The length of a history a method grows is a per-step number (issue 18, point 1).

`self.prev_f.appendleft(f)` in a method other than `__init__` makes `len(self.prev_f)` change
between steps (a multistep solver's order rises over the first steps); a captured branch or
index on it keeps the capture's value. A container filled only in `__init__` has a fixed length.
"""

from __future__ import annotations

from tests.helpers import lines_of

SOLVER = """
import collections

import torch


class Adams:
    def __init__(self, max_order: int):
        self.max_order = max_order
        self.prev_f = collections.deque(maxlen=max_order - 1)
        self.weights = []
        for i in range(max_order):
            self.weights.append(float(i))

    def _update_history(self, f: torch.Tensor):
        self.prev_f.{grow}(f)

    def step(self, y: torch.Tensor):  # graphsafe: region
        self._update_history(y)
        order = min(len(self.{held}), self.max_order - 1)
        if order < 2:
            return y * 0.5
        return y * 2
"""


def test_a_branch_on_the_length_of_a_history_grown_each_step_is_reported():
    assert lines_of(SOLVER.format(grow="appendleft", held="prev_f"), "GS301") == [21]


def test_the_length_of_a_container_filled_only_in_init_is_silent():
    assert lines_of(SOLVER.format(grow="appendleft", held="weights"), "GS301") == []


def test_a_history_that_is_only_read_does_not_grow():
    assert lines_of(SOLVER.format(grow="count", held="prev_f"), "GS301") == []
