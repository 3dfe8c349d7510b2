"""Neighbouring shapes of recent held-out misses (probe round 14, part A), each beside a
look-alike that must stay silent:

- an object kept by the constructor (given to it, or built in `__init__`) and handed out by a
  `@property` (`return self._matcher`): `self.matcher(x)` runs the kept object's `__call__`;
- objects kept in a list, tuple or dict attribute, called in a loop over it (`for fn in
  self.losses`, `for k, h in self.heads.items()`, `self.heads.values()`) or by key;
- GS301: a counter held by another object (`self.state.step`, `self.trainer.step`) given to a
  helper (`lr_at(...)`) or a schedule's method (`self.sched.value(...)`), where the other class
  advances it per step; silent where nothing advances it;
- GS702: an autocast block around a call that reaches a capture through a function or class
  of another file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import project_diagnostics


def project(tmp_path: Path, files: dict[str, str], code: str | None = None) -> set[tuple[str, int, str]]:
    return {(Path(d.path).name, d.start.line, d.code) for d in project_diagnostics(tmp_path, files)
            if code is None or d.code == code}


# ---------------------------------------------------------------- properties

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


# ---------------------------------------------------------------- containers of objects

LOSSES = """\
import torch


class FocalLoss:
    def __call__(self, x, y):
        return (x - y).abs().sum().item()


class DiceLoss:
    def __call__(self, x, y):
        return (x * y).sum()
"""

LOSS_LOOP = """\
import torch
{imports}


class Crit:
    def __init__(self):
        self.losses = {container}

    def step(self, x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
        total = x.new_zeros(())
        for fn in self.losses:
            total = total + fn(x, y)
        return total
"""


@pytest.mark.parametrize("container", ["[FocalLoss(), DiceLoss()]", "(FocalLoss(), DiceLoss())"])
def test_losses_kept_in_a_list_or_tuple_in_another_file(tmp_path, container):
    train = LOSS_LOOP.format(imports="from losses import FocalLoss, DiceLoss", container=container)
    assert project(tmp_path, {"losses.py": LOSSES, "train.py": train}) == {("losses.py", 6, "GS101")}


def test_losses_kept_in_a_list_in_the_same_file(tmp_path):
    train = LOSSES + "\n\n" + LOSS_LOOP.format(imports="", container="[FocalLoss(), DiceLoss()]")
    assert project(tmp_path, {"train.py": train}) == {("train.py", 6, "GS101")}


def test_quiet_losses_kept_in_a_list_are_silent(tmp_path):
    train = LOSS_LOOP.format(imports="from losses import DiceLoss", container="[DiceLoss(), DiceLoss()]")
    assert project(tmp_path, {"losses.py": LOSSES, "train.py": train}) == set()


HEADS = """\
import torch


class ClsHead(torch.nn.Module):
    def forward(self, x):
        return x.nonzero()


class BoxHead(torch.nn.Module):
    def forward(self, x):
        return x * 2
"""

HEADS_NET = """\
import torch
{imports}


class Net:
    def __init__(self):
        self.heads = {{"cls": {first}(), "box": BoxHead()}}

    def step(self, x: torch.Tensor):  # graphsafe: region
{body}
"""

HEAD_CALLS = {
    "by-key": "        return {k: self.heads[k](x) for k in (\"cls\", \"box\")}",
    "items": "        out = {}\n        for k, h in self.heads.items():\n            out[k] = h(x)\n        return out",
    "values": "        return [h(x) for h in self.heads.values()]",
}


@pytest.mark.parametrize("body", HEAD_CALLS.values(), ids=HEAD_CALLS.keys())
def test_heads_kept_in_a_dict_in_another_file(tmp_path, body):
    net = HEADS_NET.format(imports="from heads import ClsHead, BoxHead", first="ClsHead", body=body)
    assert project(tmp_path, {"heads.py": HEADS, "net.py": net}) == {("heads.py", 6, "GS107")}


@pytest.mark.parametrize("body", HEAD_CALLS.values(), ids=HEAD_CALLS.keys())
def test_heads_kept_in_a_dict_in_the_same_file(tmp_path, body):
    net = HEADS + "\n\n" + HEADS_NET.format(imports="", first="ClsHead", body=body)
    assert project(tmp_path, {"net.py": net}) == {("net.py", 6, "GS107")}


@pytest.mark.parametrize("body", HEAD_CALLS.values(), ids=HEAD_CALLS.keys())
def test_quiet_heads_kept_in_a_dict_are_silent(tmp_path, body):
    net = HEADS_NET.format(imports="from heads import BoxHead", first="BoxHead", body=body)
    assert project(tmp_path, {"heads.py": HEADS, "net.py": net}) == set()


def test_a_dict_of_tensors_items_still_binds_tensors():
    # the dict-of-modules branch must not change what `.items()` of a tensor dict gives
    from tests.helpers import lines_of

    source = """\
    import torch


    def step(x: torch.Tensor):  # graphsafe: region
        stats = {"a": x.sum(), "b": x.mean()}
        for k, v in stats.items():
            print(v)
    """
    assert lines_of(source, "GS104") == [7]


# ---------------------------------------------------------------- GS301: another object's counter

STATE = """\
class TrainState:
    def __init__(self):
        self.step = 0

    def advance(self):
        self.step {advance}
"""

SCHEDULES = """\
def lr_at(step: int) -> float:
    return 0.1 / (1 + step)


class Cosine:
    def value(self, step):
        return 0.5 * (1 + step / 100)
"""

LOSS_GIVEN_STATE = """\
import torch
from schedules import lr_at, Cosine


class Loss:
    def __init__(self, state):
        self.state = state
        self.sched = Cosine()

    def __call__(self, x: torch.Tensor):  # graphsafe: region
        return {use}
"""

MAIN = """\
from state import TrainState
from model import Loss

state = TrainState()
loss = Loss(state)
"""

USES = ["x * lr_at(self.state.step)", "x * self.sched.value(self.state.step)"]


@pytest.mark.parametrize("use", USES, ids=["helper", "schedule"])
def test_counter_of_an_object_given_to_the_constructor(tmp_path, use):
    files = {"state.py": STATE.format(advance="+= 1"), "schedules.py": SCHEDULES,
             "model.py": LOSS_GIVEN_STATE.format(use=use), "main.py": MAIN}
    assert project(tmp_path, files) == {("model.py", 11, "GS301")}


@pytest.mark.parametrize("use", USES, ids=["helper", "schedule"])
def test_counter_of_an_object_built_in_init(tmp_path, use):
    model = LOSS_GIVEN_STATE.format(use=use).replace(
        "def __init__(self, state):\n        self.state = state",
        "def __init__(self):\n        self.state = TrainState()").replace(
        "from schedules", "from state import TrainState\nfrom schedules")
    files = {"state.py": STATE.format(advance="+= 1"), "schedules.py": SCHEDULES, "model.py": model}
    assert project(tmp_path, files) == {("model.py", 12, "GS301")}


@pytest.mark.parametrize("use", USES, ids=["helper", "schedule"])
def test_field_of_an_object_nothing_advances_is_silent(tmp_path, use):
    files = {"state.py": STATE.format(advance="= 0"), "schedules.py": SCHEDULES,
             "model.py": LOSS_GIVEN_STATE.format(use=use), "main.py": MAIN}
    assert project(tmp_path, files) == set()


def test_trainer_counter_read_by_a_module_it_is_given_to(tmp_path):
    trainer = """\
    class Trainer:
        def __init__(self):
            self.step = 0

        def fit(self, batches):
            for b in batches:
                self.step += 1
    """
    model = """\
    import torch
    from schedules import Cosine


    class Module:
        def __init__(self, trainer):
            self.trainer = trainer
            self.sched = Cosine()

        def forward(self, x: torch.Tensor):  # graphsafe: region
            return x * self.sched.value(self.trainer.step)
    """
    main = "from trainer import Trainer\nfrom model import Module\n\nm = Module(Trainer())\n"
    files = {"schedules.py": SCHEDULES, "trainer.py": trainer, "model.py": model, "main.py": main}
    assert project(tmp_path, files) == {("model.py", 11, "GS301")}


def test_helper_given_tensors_and_a_setting_of_another_object_is_silent(tmp_path):
    # `adaptive_weight(loss, g, self.cfg.w)`: given tensors, the helper may be device work
    config = "class Config:\n    def __init__(self):\n        self.w = 0.5\n"
    losses = "def weigh(a, b, w):\n    return a * b * w\n"
    model = """\
    import torch
    from config import Config
    from losses import weigh


    class M:
        def __init__(self):
            self.cfg = Config()

        def step(self, a: torch.Tensor, b: torch.Tensor):  # graphsafe: region
            return weigh(a, b, self.cfg.w)
    """
    assert project(tmp_path, {"config.py": config, "losses.py": losses, "model.py": model}) == set()


# ---------------------------------------------------------------- GS702 across files

GRAPHS = """\
import torch


def capture_graphs(g, fn, x):
    with torch.cuda.graph(g):
        return fn(x)


def warm_up(fn, x):
    return fn(x)


def setup(g, fn, x):
    return capture_graphs(g, fn, x)


class Capturer:
    def __init__(self):
        self.g = torch.cuda.CUDAGraph()

    def capture(self, fn, x):
        self.g.capture_begin()
        y = fn(x)
        self.g.capture_end()
        return y

    def warm(self, fn, x):
        return fn(x)
"""

AUTOCAST_MAIN = """\
import torch
from graphs import capture_graphs, warm_up, setup, Capturer


def main(g, x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = capture_graphs(g, torch.sin, x)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = warm_up(torch.sin, x)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = setup(g, torch.sin, x)
    c = Capturer()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = c.capture(torch.sin, x)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = c.warm(torch.sin, x)
    with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
        y = c.capture(torch.sin, x)
    return y
"""


def test_autocast_around_a_capture_in_another_file(tmp_path):
    # a helper that captures, one that calls one, a class's capture method; not the warm-ups,
    # nor a block that already passes cache_enabled=False
    found = project(tmp_path, {"graphs.py": GRAPHS, "main.py": AUTOCAST_MAIN}, "GS702")
    assert found == {("main.py", 6, "GS702"), ("main.py", 10, "GS702"), ("main.py", 13, "GS702")}


def test_autocast_around_another_file_through_a_module_and_an_attribute(tmp_path):
    main = """\
    import torch
    import graphs


    class Runner:
        def __init__(self):
            self.cap = graphs.Capturer()

        def go(self, g, x):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                graphs.capture_graphs(g, torch.sin, x)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                self.cap.capture(torch.sin, x)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                self.cap.warm(torch.sin, x)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                self.helper(g, x)

        def helper(self, g, x):
            return graphs.setup(g, torch.sin, x)
    """
    found = project(tmp_path, {"graphs.py": GRAPHS, "main.py": main}, "GS702")
    assert found == {("main.py", 10, "GS702"), ("main.py", 12, "GS702"), ("main.py", 16, "GS702")}


def test_autocast_around_another_file_says_so_and_is_fixable(tmp_path):
    diagnostics = [d for d in project_diagnostics(tmp_path, {"graphs.py": GRAPHS, "main.py": AUTOCAST_MAIN})
                   if d.code == "GS702"]
    assert diagnostics and all("a capture in a function it calls" in d.message for d in diagnostics)
    assert all(d.fix is not None for d in diagnostics)


def test_autocast_around_a_capture_too_deep_is_silent(tmp_path):
    # four calls below the block: beyond the helper depth the rule looks into
    deep = GRAPHS + "\n\ndef d1(g, x):\n    return d2(g, x)\n\n\ndef d2(g, x):\n    return d3(g, x)\n\n\n" \
        "def d3(g, x):\n    return d4(g, x)\n\n\ndef d4(g, x):\n    return capture_graphs(g, torch.sin, x)\n"
    main = "import torch\nfrom graphs import d1, d3\n\n\ndef main(g, x):\n" \
        "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        d1(g, x)\n" \
        "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        d3(g, x)\n"
    assert project(tmp_path, {"graphs.py": deep, "main.py": main}, "GS702") == {("main.py", 8, "GS702")}


@pytest.mark.parametrize("train", [PROPERTY_GIVEN, PROPERTY_BUILT], ids=["given", "built"])
def test_method_called_on_what_a_property_hands_out(tmp_path, train):
    # `self.matcher.match(cost)`: a method of the kept object, not its `__call__`
    matcher = MATCHER.replace("def __call__(self, cost", "def match(self, cost")
    source = train.format(cls="HostMatcher").replace("self.matcher(cost)", "self.matcher.match(cost)")
    assert project(tmp_path, {"matcher.py": matcher, "train.py": source}) == {("matcher.py", 6, "GS102")}
    quiet = train.format(cls="DeviceMatcher").replace("self.matcher(cost)", "self.matcher.match(cost)")
    assert project(tmp_path, {"matcher.py": matcher, "train.py": quiet}) == set()
