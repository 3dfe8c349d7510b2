"""Hooks a trainer calls by name (`self.notify("on_batch_begin")` with `notify` doing
`getattr(self, name)(...)`) are calls of that method in the call graph (analyzer/hooks.py)."""

from __future__ import annotations

import textwrap

from graphsafe.analyzer.grouping import each_use
from tests.helpers import diagnostics, project_diagnostics

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


PLUGINS = """
def trigger_plugins(strategy, event, **kwargs):
    for p in strategy.plugins:
        if hasattr(p, event):
            getattr(p, event)(strategy, **kwargs)


def call_hook(trainer, hook_name, *args, module=None):
    fn = getattr(module, hook_name)
    return fn(*args)
"""

STRATEGY = """
from utils import call_hook, trigger_plugins


class Clock:
    def after_iteration(self, strategy):
        print("iteration", strategy)

    def training_step(self, batch):
        print("step", batch)


class Strategy:
    def train_step(self, x):
        y = self.model(x)
        trigger_plugins(self, "after_iteration")
        call_hook(self, "training_step", x, module=self.model)
        trigger_plugins(self, event="not_a_hook_anywhere")
        return y
"""


def test_a_function_of_another_file_dispatching_by_a_given_name_runs_that_method(tmp_path):
    found = {(d.path.rpartition("/")[2], d.start.line) for d in project_diagnostics(
        tmp_path, {"utils.py": PLUGINS, "strategy.py": STRATEGY}, regions=("Strategy.train_step",))}
    assert ("strategy.py", 7) in found  # trigger_plugins(self, "after_iteration")
    assert ("strategy.py", 10) in found  # call_hook: `fn = getattr(module, hook_name)`, then `fn(...)`


def test_a_name_given_to_a_function_that_does_not_dispatch_by_it_runs_nothing(tmp_path):
    plugins = PLUGINS.replace("getattr(p, event)(strategy, **kwargs)", "p.run(event)")
    plugins = plugins.replace("fn = getattr(module, hook_name)", "fn = module.default")
    found = {(d.path.rpartition("/")[2], d.start.line) for d in project_diagnostics(
        tmp_path, {"utils.py": plugins, "strategy.py": STRATEGY}, regions=("Strategy.train_step",))}
    assert not any(name == "strategy.py" and line in (7, 10) for name, line in found)


TEMPLATE = """
import torch
from utils import trigger_plugins


class Template:
    def __init__(self, model):
        self.model = model
        self.loss: torch.Tensor = torch.zeros(())

    def train_step(self, x):
        self.loss.copy_(self.model(x).sum())
        trigger_plugins(self, "before_backward")
        self.loss.backward()


class Regularizer:
    def before_backward(self, strategy, **kwargs):
        if not strategy.loss:
            raise ValueError("no loss")
"""


def test_the_dispatched_method_gets_what_the_dispatcher_hands_on(tmp_path):
    found = {(d.path.rpartition("/")[2], d.start.line, d.code) for d in project_diagnostics(
        tmp_path, {"utils.py": PLUGINS, "template.py": TEMPLATE}, regions=("Template.train_step",))}
    assert ("template.py", 19, "GS201") in found  # `strategy` is the Template: its loss a tensor
