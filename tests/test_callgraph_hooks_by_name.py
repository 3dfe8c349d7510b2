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


CALLBACKS = textwrap.dedent("""\
    import torch


    class Callback:
        def on_batch_end(self, net, **kwargs):
            pass


    class Scoring(Callback):
        def on_batch_end(self, net, batch=None, **kwargs):
            self.scores.append(batch.mean().item())


    class Timer(Callback):
        def on_epoch_end(self, net, **kwargs):
            print("epoch done")


    class Net:
        def __init__(self, callbacks):
            self.callbacks_ = [(type(cb).__name__, cb) for cb in callbacks]

        def notify(self, method_name, **cb_kwargs):
            for _, cb in self.callbacks_:
                getattr(cb, method_name)(self, **cb_kwargs)

        def convert(self, x, name):
            return getattr(torch, name)(x)

        def step(self, x: torch.Tensor):  # graphsafe: region
            y = x * 2
            self.notify("on_batch_end", batch=y, **{"loss": y})
            return self.convert(y, "on_epoch_end")
""")


def test_a_hook_dispatched_to_each_callback_runs_every_callback_class_that_defines_it():
    found = sorted((d.code, d.start.line) for d in each_use(diagnostics(CALLBACKS)))
    assert ("GS101", 11) in found


def test_a_getattr_on_something_other_than_a_loop_over_callbacks_calls_no_project_method():
    found = sorted((d.code, d.start.line) for d in each_use(diagnostics(CALLBACKS)))
    assert ("GS501", 16) not in found
