"""Hooks a trainer calls by name (`self.notify("on_batch_begin")` with `notify` doing
`getattr(self, name)(...)`) are calls of that method in the call graph (analyzer/hooks.py)."""

from __future__ import annotations

import textwrap

from graphsafe.analyzer.grouping import each_use
from tests.helpers import diagnostics

NET = textwrap.dedent("""\
    import torch


    class Base:
        def notify(self, method_name, **kwargs):
            getattr(self, method_name)(self, **kwargs)

        def on_batch_begin(self, net, batch=None):
            self.rows.append({})

        def on_batch_end(self, net, batch=None):
            print("done")


    class Net(Base):
        def __init__(self):
            self.rows = []

        def step(self, x: torch.Tensor, name: str):  # graphsafe: region
            self.notify("on_batch_begin", batch=x)
            self.notify(name, batch=x)
            return x * 2
""")


def test_a_hook_named_by_a_string_literal_runs_in_the_region():
    found = sorted((d.code, d.start.line) for d in each_use(diagnostics(NET)))
    assert ("GS503", 9) in found


def test_a_hook_named_at_run_time_is_not_guessed():
    found = sorted((d.code, d.start.line) for d in each_use(diagnostics(NET)))
    assert ("GS501", 12) not in found
