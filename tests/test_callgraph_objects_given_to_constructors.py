"""Call graph: an object handed to a constructor and kept (`self.matcher = matcher`), then called
from the region (`self.matcher(out, targets)`), runs the class the constructor's callers pass:
the hazards of its `__call__` (or of a method called on it) are reached. The object may be given
by keyword, built in the call, passed on to a base class's constructor, kept through a tuple
assignment, given through a factory function, or kept unless `None` (then a default class). A
safe class given, a class outside the project, or the default kept are silent. A `@dataclass`
field holds what the generated `__init__` is given (not every subclass of its declared class).
So does an attribute kept from a parameter annotated with a base class (`controller:
Controller` given `HostController()`), also when called through a local (`controller =
self.controller`; `a, b = self.a, self.b`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import project_findings


project = project_findings  # (file name, line, code) of each diagnostic of a small program


MATCHER = """\
import torch


class HostMatcher:
    def __call__(self, cost: torch.Tensor):
        return cost.tolist()

    def match(self, cost: torch.Tensor):
        return cost.tolist()


class DeviceMatcher:
    def __call__(self, cost: torch.Tensor):
        return cost.argmin(-1)

    def match(self, cost: torch.Tensor):
        return cost.argmin(-1)
"""


CRITERION = """\
import torch


class Criterion(torch.nn.Module):
    def __init__(self, matcher, weight: float):
        super().__init__()
        self.matcher = matcher
        self.weight = weight

    def forward(self, cost: torch.Tensor):
        return self.matcher(cost)
"""


def trainer(construct: str) -> str:
    return f"""\
import torch
from criterion import Criterion
from matcher import HostMatcher, DeviceMatcher


class Trainer:
    def __init__(self):
        matcher = HostMatcher()
        self.spare = HostMatcher()
        self.criterion = {construct}

    def step(self, cost: torch.Tensor):  # graphsafe: region
        return self.criterion(cost)
"""


def files(construct: str) -> dict[str, str]:
    return {"matcher.py": MATCHER, "criterion.py": CRITERION, "trainer.py": trainer(construct)}


def test_object_given_to_a_constructor_is_called_from_the_region(tmp_path: Path) -> None:
    found = project(tmp_path, files("Criterion(matcher, 1.0)"))
    assert ("matcher.py", 6, "GS102") in found
    assert ("matcher.py", 9, "GS102") not in found  # `match` is not called


def test_object_given_by_keyword_and_built_in_the_call(tmp_path: Path) -> None:
    found = project(tmp_path, files("Criterion(weight=1.0, matcher=HostMatcher())"))
    assert ("matcher.py", 6, "GS102") in found


def test_method_called_on_the_kept_object(tmp_path: Path) -> None:
    text = files("Criterion(matcher, 1.0)")
    text["criterion.py"] = text["criterion.py"].replace("self.matcher(cost)", "self.matcher.match(cost)")
    found = project(tmp_path, text)
    assert ("matcher.py", 9, "GS102") in found
    assert ("matcher.py", 6, "GS102") not in found


def test_silent_when_the_constructor_is_given_a_safe_class(tmp_path: Path) -> None:
    # a hazardous matcher exists and is built, but the criterion keeps the device-side one
    found = project(tmp_path, files("Criterion(DeviceMatcher(), 1.0)"))
    assert not {f for f in found if f[0] == "matcher.py"}


def test_silent_when_the_kept_object_is_not_a_project_class(tmp_path: Path) -> None:
    found = project(tmp_path, files("Criterion(torch.nn.Identity(), 1.0)"))
    assert not {f for f in found if f[0] == "matcher.py"}


BASE_CRITERION = """\
import torch


class BaseCriterion(torch.nn.Module):
    def __init__(self, matcher):
        super().__init__()
        self.matcher = matcher

    def forward(self, cost: torch.Tensor):
        return self.matcher(cost)


class Criterion(BaseCriterion):
    def __init__(self, matcher, weight: float):
        super().__init__(matcher)
        self.weight = weight
"""


def test_object_passed_on_to_a_base_class_constructor(tmp_path: Path) -> None:
    text = files("Criterion(matcher, 1.0)")
    text["criterion.py"] = BASE_CRITERION
    assert ("matcher.py", 6, "GS102") in project(tmp_path, text)


def test_object_passed_on_silent_for_a_safe_class(tmp_path: Path) -> None:
    text = files("Criterion(DeviceMatcher(), 1.0)")
    text["criterion.py"] = BASE_CRITERION
    assert not {f for f in project(tmp_path, text) if f[0] == "matcher.py"}


def test_object_kept_through_a_tuple_assignment(tmp_path: Path) -> None:
    text = files("Criterion(matcher, 1.0)")
    text["criterion.py"] = CRITERION.replace(
        "self.matcher = matcher\n        self.weight = weight", "self.matcher, self.weight = matcher, weight")
    assert ("matcher.py", 6, "GS102") in project(tmp_path, text)


def test_object_given_through_a_factory_function(tmp_path: Path) -> None:
    text = files("build(matcher)")
    text["trainer.py"] = text["trainer.py"].replace("from criterion import Criterion", "from criterion import build")
    text["criterion.py"] = CRITERION + "\n\ndef build(matcher):\n    return Criterion(matcher, 1.0)\n"
    assert ("matcher.py", 6, "GS102") in project(tmp_path, text)


DEFAULTED = "from matcher import DeviceMatcher\n" + CRITERION.replace(
    "def __init__(self, matcher, weight: float)", "def __init__(self, matcher=None, weight: float = 1.0)").replace(
    "self.matcher = matcher", "self.matcher = matcher if matcher is not None else DeviceMatcher()")


def test_object_kept_unless_none_given_a_default(tmp_path: Path) -> None:
    text = files("Criterion(matcher, 1.0)")
    text["criterion.py"] = DEFAULTED
    assert ("matcher.py", 6, "GS102") in project(tmp_path, text)


def test_default_kept_when_no_object_is_given(tmp_path: Path) -> None:
    text = files("Criterion(weight=2.0)")
    text["criterion.py"] = DEFAULTED
    assert not {f for f in project(tmp_path, text) if f[0] == "matcher.py"}


# -------------------------------------------------- dataclass fields

CONTAINER = """\
from dataclasses import dataclass, field
from typing import List

import torch


class Callback:
    def on_batch_end(self, logs):
        pass


class History(Callback):
    def __init__(self):
        self.samples_seen = 0

    def on_batch_end(self, logs):
        self.samples_seen += logs["n"]


class EarlyStopping(Callback):
    def __init__(self):
        self.wait = 0

    def on_batch_end(self, logs):
        self.wait += 1


@dataclass{options}
class CallbackContainer:{skipped}
    callbacks: List[Callback] = field(default_factory=list)
    verbose: int = 0

    def on_batch_end(self, logs):
        for callback in self.callbacks:
            callback.on_batch_end(logs)


class Model:
    def __init__(self, net):
        self.net = net
        self.container = CallbackContainer([History()])

    def train_batch(self, x):  # graphsafe: region
        self.container.on_batch_end({{"n": x.shape[0]}})
        return self.net(x)
"""


@pytest.mark.parametrize("skipped", [
    "",
    # not parameters of the generated __init__: the list is still its first positional argument
    "\n    registry: ClassVar[dict] = {}\n    cache: dict = field(init=False, default_factory=dict)",
])
def test_a_dataclass_field_holds_what_its_constructor_is_given(tmp_path: Path, skipped: str) -> None:
    # History, passed to the generated __init__, runs; EarlyStopping, a subclass nobody passes, does not
    source = CONTAINER.format(options="", skipped=skipped).replace("from typing import List", "from typing import ClassVar, List")
    assert project(tmp_path, {"m.py": source}, "GS302") == {("m.py", 17, "GS302")}


def test_a_dataclass_without_a_generated_init_keeps_the_declared_class(tmp_path: Path) -> None:
    assert project(tmp_path, {"m.py": CONTAINER.format(options="(init=False)", skipped="")}, "GS302") == set()


# ---------------------------------------- a kept object called through a local, or declared as a base

SOLVER = """\
import torch


class Controller(torch.nn.Module):
    def adapt(self, dt: torch.Tensor):
        return dt * 2


class HostController(Controller):
    def adapt(self, dt: torch.Tensor):
        return dt * torch.tensor(0.9, device=dt.device)


class DeviceController(Controller):
    def adapt(self, dt: torch.Tensor):
        return dt * 0.9


class Solver(torch.nn.Module):
    def __init__(self, controller{annotation}, max_steps: int):
        super().__init__()
        self.controller = controller
        self.max_steps = max_steps

    def solve(self, dt: torch.Tensor):
        {call}


def solve_ivp(dt: torch.Tensor):  # graphsafe: region
    controller = {passed}()
    solver = Solver(controller, 10)
    return solver.solve(dt)
"""

THROUGH_A_LOCAL = "controller, steps = self.controller, self.max_steps\n        return controller.adapt(dt)"


@pytest.mark.parametrize("annotation", ["", ": Controller"])
@pytest.mark.parametrize("call", ["return self.controller.adapt(dt)", THROUGH_A_LOCAL])
def test_a_subclass_given_for_a_declared_base_runs_its_own_method(tmp_path: Path, annotation: str, call: str) -> None:
    found = project(tmp_path, {"solver.py": SOLVER.format(annotation=annotation, call=call, passed="HostController")})
    assert ("solver.py", 11, "GS402") in found


@pytest.mark.parametrize("call", ["return self.controller.adapt(dt)", THROUGH_A_LOCAL])
def test_another_subclass_given_leaves_the_hazardous_one_unreached(tmp_path: Path, call: str) -> None:
    found = project(tmp_path, {"solver.py": SOLVER.format(annotation=": Controller", call=call, passed="DeviceController")})
    assert not [f for f in found if f[2] == "GS402"]
