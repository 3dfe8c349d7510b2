"""Call graph: code that runs without a call of its own name in the region, each case beside a
look-alike that must stay silent:

- a model built by a factory (`self.model = build_model()` with `model = Net(); return model`,
  or a local `model = build(); model(x)`) runs the returned instance's forward; a factory
  returning a tuple keeps each element's class;
- reading a `@property` runs its body (`self.norm`, `self.stats.mean`, a base class's property
  in another file), and `if self.has_nan:` branches on the tensor it returns; a bound method
  read without a call runs nothing;
- a property handing out a kept object (`return self._matcher`, given to the constructor or built
  in `__init__`): `self.matcher(x)` and `self.matcher.match(x)` run the kept object's methods,
  also reached through another object (`self.crit.matcher(x)`); a property that computes
  something else is no alias;
- a `with` block runs `__enter__`/`__exit__` of a project class.
"""

from __future__ import annotations

import pytest

from tests.helpers import lines_of, project_findings


found = lines_of  # the lines where a code is reported
project = project_findings  # (file name, line, code) of each diagnostic of a small program


# --------------------------------------------------------------------- factories

MODELS = """\
import torch
import torch.nn as nn


class Syncing(nn.Module):
    def forward(self, x):
        return x.sum().item()


class Quiet(nn.Module):
    def forward(self, x):
        return x * 2


def build_syncing():
    model = Syncing()
    model = model.to("cuda")
    return model


def build_quiet():
    model = Quiet()
    return model
"""


def test_factory_built_model_is_followed_across_files(tmp_path):
    train = """\
    import torch
    from models import build_quiet, build_syncing


    class Trainer:
        def __init__(self):
            self.model = build_syncing()
            self.other = build_quiet()

        def step(self, x):  # graphsafe: region
            return self.model(x) + self.other(x)
    """
    assert project(tmp_path, {"models.py": MODELS, "train.py": train}) == {("models.py", 7, "GS101")}


def test_factory_built_model_in_a_local_is_followed(tmp_path):
    run = """\
    from models import build_syncing, build_quiet


    def step(x):  # graphsafe: region
        model = build_syncing()
        return model(x)


    def quiet_step(x):  # graphsafe: region
        model = build_quiet()
        return model(x)
    """
    assert project(tmp_path, {"models.py": MODELS, "run.py": run}) == {("models.py", 7, "GS101")}


def test_unreached_factory_model_stays_silent(tmp_path):
    train = """\
    from models import build_syncing


    class Trainer:
        def __init__(self):
            self.model = build_syncing()

        def step(self, x):  # graphsafe: region
            return x * 2
    """
    assert project(tmp_path, {"models.py": MODELS, "train.py": train}) == set()


def test_tuple_returned_by_a_factory_keeps_each_element_class(tmp_path):
    models = MODELS + '''

def build_pair():
    model = Syncing()
    return model, Quiet()
'''
    train = """\
    import torch
    from models import build_pair


    class Trainer:
        def __init__(self):
            self.model, self.other = build_pair()

        def step(self, x):  # graphsafe: region
            return self.model(x)


    def script(x):
        quiet, loud = build_pair()[::-1]
        model, other = build_pair()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = other(x)
        return out
    """
    # the Trainer's `self.model` is element 0 (Syncing); the script captures element 1 (Quiet)
    assert project(tmp_path, {"models.py": models, "train.py": train}) == {("models.py", 7, "GS101")}


# -------------------------------------------------------------------- properties

PROPERTIES = """
import torch
import torch.nn as nn


class Stats:
    def __init__(self):
        self.total = torch.zeros(())

    @property
    def mean(self):
        return self.total.item()

    @property
    def big(self):
        return self.total > 10

    @property
    def quiet_mean(self):
        return self.total / 2


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.zeros(4))

    @property
    def has_nan(self):
        return torch.isnan(self.buf).any()

    @property
    def n_layers(self):
        return 4


class Net(Base):
    def __init__(self):
        super().__init__()
        self.stats = Stats()

    @property
    def norm(self):
        return self.buf.norm().item()

    def forward(self, x):  # graphsafe: region
        n = self.norm
        m = self.stats.mean
        q = self.stats.quiet_mean
        if self.has_nan:
            x = x * 0
        if self.n_layers > 2:
            x = x + 1
        if self.stats.big:
            x = x - 1
        return x
"""


def test_property_reads_run_the_property():
    assert found(PROPERTIES, "GS101") == [12, 44]


def test_branch_on_a_tensor_property():
    assert found(PROPERTIES, "GS201") == [50, 54]


def test_property_not_read_in_a_region_is_silent():
    source = PROPERTIES.replace("        n = self.norm\n        m = self.stats.mean\n", "")
    assert found(source, "GS101") == []


def test_property_of_a_base_class_in_another_file(tmp_path):
    base = """\
    import torch
    import torch.nn as nn


    class Base(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("buf", torch.zeros(4))
            self.head = nn.Linear(4, 4)

        @property
        def norm(self):
            return self.buf.norm().item()

        def helper(self):
            return self.buf.sum().item()
    """
    model = """\
    from base import Base


    class Model(Base):
        def forward(self, x):  # graphsafe: region
            n = self.norm
            h = self.head
            f = self.helper
            return x
    """
    # `self.helper` is read, not called: only the property runs
    assert project(tmp_path, {"base.py": base, "model.py": model}) == {("base.py", 13, "GS101")}


# ------------------------------------------- properties handing out kept objects

MATCHER = """\
import torch


class HostMatcher:
    def __call__(self, cost: torch.Tensor):
        return cost.tolist()


class DeviceMatcher:
    def __call__(self, cost: torch.Tensor):
        return cost.argmin(-1)
"""


PROPERTY_GIVEN = """\
import torch
from matcher import {cls}


class Criterion(torch.nn.Module):
    def __init__(self, matcher):
        super().__init__()
        self._matcher = matcher

    @property
    def matcher(self):
        \"\"\"The matcher this criterion was built with.\"\"\"
        return self._matcher

    def forward(self, cost: torch.Tensor):  # graphsafe: region
        return self.matcher(cost)


crit = Criterion({cls}())
"""


PROPERTY_BUILT = """\
import torch
from matcher import {cls}


class Criterion(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._matcher = {cls}()

    @property
    def matcher(self):
        return self._matcher

    def forward(self, cost: torch.Tensor):  # graphsafe: region
        return self.matcher(cost)
"""


@pytest.mark.parametrize("train", [PROPERTY_GIVEN, PROPERTY_BUILT], ids=["given", "built"])
def test_property_handing_out_a_kept_object_is_followed(tmp_path, train):
    files = {"matcher.py": MATCHER, "train.py": train.format(cls="HostMatcher")}
    assert project(tmp_path, files) == {("matcher.py", 6, "GS102")}


@pytest.mark.parametrize("train", [PROPERTY_GIVEN, PROPERTY_BUILT], ids=["given", "built"])
def test_property_handing_out_a_quiet_object_is_silent(tmp_path, train):
    files = {"matcher.py": MATCHER, "train.py": train.format(cls="DeviceMatcher")}
    assert project(tmp_path, files) == set()


def test_property_reached_through_another_object(tmp_path):
    # `self.crit.matcher(x)`: the property of a class of another file, then the kept object
    model = """\
    import torch
    from train import Criterion


    class Model:
        def __init__(self):
            self.crit = Criterion()

        def step(self, cost: torch.Tensor):  # graphsafe: region
            return self.crit.matcher(cost)
    """
    files = {"matcher.py": MATCHER, "train.py": PROPERTY_BUILT.replace("# graphsafe: region", "").format(
        cls="HostMatcher"), "model.py": model}
    assert project(tmp_path, files) == {("matcher.py", 6, "GS102")}


def test_property_computing_something_else_is_not_an_alias(tmp_path):
    # the property returns a fresh quiet object, not the kept host matcher
    train = PROPERTY_BUILT.format(cls="HostMatcher").replace(
        "return self._matcher", "return DeviceMatcher()").replace(
        "from matcher import HostMatcher", "from matcher import DeviceMatcher, HostMatcher")
    assert project(tmp_path, {"matcher.py": MATCHER, "train.py": train}) == set()


@pytest.mark.parametrize("train", [PROPERTY_GIVEN, PROPERTY_BUILT], ids=["given", "built"])
def test_method_called_on_what_a_property_hands_out(tmp_path, train):
    # `self.matcher.match(cost)`: a method of the kept object, not its `__call__`
    matcher = MATCHER.replace("def __call__(self, cost", "def match(self, cost")
    source = train.format(cls="HostMatcher").replace("self.matcher(cost)", "self.matcher.match(cost)")
    assert project(tmp_path, {"matcher.py": matcher, "train.py": source}) == {("matcher.py", 6, "GS102")}
    quiet = train.format(cls="DeviceMatcher").replace("self.matcher(cost)", "self.matcher.match(cost)")
    assert project(tmp_path, {"matcher.py": matcher, "train.py": quiet}) == set()


# ------------------------------------------------------------------- with blocks

def test_with_block_runs_enter_and_exit_of_a_project_class(tmp_path):
    util = """\
    import time


    class Timer:
        def __enter__(self):
            self.start = time.perf_counter()
            return self

        def __exit__(self, *exc):
            return False


    class Quiet:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def report(self):
            return time.time()
    """
    step = """\
    from util import Quiet, Timer


    def step(x):  # graphsafe: region
        with Timer():
            y = x * 2
        with Quiet() as q:
            y = y + 1
        return y
    """
    assert project(tmp_path, {"util.py": util, "step.py": step}) == {("util.py", 6, "GS502")}
