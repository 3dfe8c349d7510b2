"""Call graph: functions handed around as values. Calling a parameter runs the functions its
callers pass (a `def`, an imported function, or the nested function a factory returns, as
learning-rate schedulers are built: `scheduler = cosine_lr(opt, ...)`, then `scheduler(step)` in
the training step), and calling an attribute runs the nested function a factory method returned
for it; each case beside a look-alike that must stay silent.
"""

from __future__ import annotations

from tests.helpers import project_findings

SCHEDULER = """\
def assign_learning_rate(optimizer, new_lr):
    for param_group in optimizer.param_groups:
        param_group["lr"] = new_lr


def cosine_lr(optimizer, base_lr, warmup):
    def _lr_adjuster(step):
        lr = base_lr * (step + 1) / warmup
        assign_learning_rate(optimizer, lr)
        return lr
    return _lr_adjuster
"""

TRAIN = """\
import torch
from sched import {imported}


def train_one_epoch(model, data, optimizer, scheduler):
    for i, batch in enumerate(data):  # graphsafe: region
        scheduler({argument})
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()


def main(model, data):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    {made}
    train_one_epoch(model, data, optimizer, scheduler)
"""


def run(tmp_path, imported="cosine_lr", argument="100 + i", made="scheduler = cosine_lr(optimizer, 0.1, 10)"):
    files = {"sched.py": SCHEDULER, "train.py": TRAIN.format(imported=imported, argument=argument, made=made)}
    return project_findings(tmp_path, files, "GS301")


def test_calling_a_parameter_runs_the_function_a_factory_returns_to_the_caller(tmp_path):
    # the step's per-step number reaches the param-group write through the returned closure
    assert run(tmp_path) == {("sched.py", 3, "GS301")}


def test_a_constant_handed_to_the_returned_function_stays_silent(tmp_path):
    assert run(tmp_path, argument="5") == set()


def test_calling_a_parameter_runs_an_imported_function_passed_by_name(tmp_path):
    made = "scheduler = assign_step"
    source_extra = "\n\ndef assign_step(step):\n    assign_learning_rate(None, step * 0.1)\n"
    files = {"sched.py": SCHEDULER + source_extra,
             "train.py": TRAIN.format(imported="assign_step", argument="100 + i", made=made)}
    assert project_findings(tmp_path, files, "GS301") == {("sched.py", 3, "GS301")}


def test_a_parameter_given_no_function_runs_nothing(tmp_path):
    # the callers pass a number: calling the parameter resolves to no project function, so the
    # param-group write is not reached (the step's own GS301 stands: the program holds a
    # learning-rate writer outside the region, which is the evidence that rule asks for)
    assert {f for f in run(tmp_path, made="scheduler = 3") if f[0] == "sched.py"} == set()


def test_calling_a_parameter_runs_an_imported_function_passed_directly(tmp_path):
    source_extra = "\n\ndef assign_step(step):\n    assign_learning_rate(None, step * 0.1)\n"
    train = TRAIN.format(imported="assign_step", argument="100 + i", made="pass").replace(
        "optimizer, scheduler)\n", "optimizer, assign_step)\n")
    assert project_findings(tmp_path, {"sched.py": SCHEDULER + source_extra, "train.py": train},
                            "GS301") == {("sched.py", 3, "GS301")}


GRID = """\
import torch


class Solver:
    def __init__(self, step_size=None):
        if step_size is None:
            self.grid = lambda t: t
        else:
            self.grid = self._grid_from_step(step_size)

    @staticmethod
    def _grid_from_step(step_size):
        def _grid(t):
            n = torch.ceil((t[-1] - t[0]) / step_size).item()
            return torch.arange(0, n, device=t.device) * step_size
        return {returned}

    def integrate(self, t):  # graphsafe: region
        return self.grid(t)
"""


def test_calling_an_attribute_runs_the_function_a_factory_method_returned_for_it(tmp_path):
    # the `.item()` and the `arange` it sizes (GS408), both in the returned function
    assert project_findings(tmp_path, {"solver.py": GRID.format(returned="_grid")}) == {
        ("solver.py", 14, "GS101"), ("solver.py", 15, "GS408")}


def test_an_attribute_given_what_a_factory_returns_that_is_no_function_runs_nothing(tmp_path):
    assert project_findings(tmp_path, {"solver.py": GRID.format(returned="step_size")}) == set()


def test_an_attribute_bound_several_ways_runs_what_the_factory_returns_beside_the_rest(tmp_path):
    """torchdiffeq's `grid_constructor`: a lambda, the constructor's argument, or a factory's result."""
    source = GRID.format(returned="_grid").replace(
        "        if step_size is None:\n            self.grid = lambda t: t\n",
        "        if step_size is None and grid is None:\n            self.grid = lambda t: t\n"
        "        elif step_size is None:\n            self.grid = grid\n").replace(
        "def __init__(self, step_size=None):", "def __init__(self, step_size=None, grid=None):")
    assert "self.grid = grid" in source
    assert project_findings(tmp_path, {"solver.py": source}) == {("solver.py", 16, "GS101"), ("solver.py", 17, "GS408")}


BOUND_METHOD = """\
import torch


class Net:
    def train_step(self, batch):
        loss = self.model(batch)
        print("loss", loss)
        return loss

    @property
    def history(self):
        print("read", self.model.weight)
        return []

    def run_epoch(self, loader, step_fn):  # graphsafe: region
        for batch in loader:
            step_fn(batch)

    def fit(self, loader):
        self.run_epoch(loader, step_fn=self.train_step)
        self.run_epoch(loader, step_fn=self.history)
"""


def test_calling_a_parameter_runs_the_bound_method_its_caller_hands_on(tmp_path):
    found = project_findings(tmp_path, {"net.py": BOUND_METHOD})
    assert ("net.py", 7, "GS104") in found  # train_step, handed on as `self.train_step`
    assert not any(line == 12 for _, line, _ in found)  # a property hands on what it returns


DECORATED = """\
import functools

import torch


def knowngood(func):
    @functools.wraps(func)
    def _fn(*args, **kwargs):
        print("compiling", func)
        return func(*args, **kwargs)
    return _fn


@knowngood
def update(x: torch.Tensor):
    return x * 2


@functools.lru_cache
def table(n: int):
    print("built", n)
    return n


def step(x: torch.Tensor):  # graphsafe: region
    return update(x) * table(3)
"""


def test_calling_a_function_a_project_decorator_wraps_runs_the_wrapper(tmp_path):
    found = project_findings(tmp_path, {"dec.py": DECORATED})
    assert ("dec.py", 9, "GS501") in found
