"""Capturing one model through a generation loop shared by many: the loop's hook calls
(`self.prepare_inputs(...)` in a base class's `generate`) go to the overrides of the class the
region runs on, not to every override in the hierarchy. The class comes from the region
(`ModelA.generate`, inherited or extended with `super()`), or from construction
(`self.model = ModelA()` then `self.model.generate(x)`)."""

from __future__ import annotations

import pytest

from tests.helpers import project_diagnostics

BASE = """
import torch


class Generator:
    def generate(self, x: torch.Tensor, steps: int):
        for _ in range(steps):
            x = self.prepare_inputs(x)
            x = self.step(x)
        return x

    def step(self, x: torch.Tensor):
        return x * 2

    def prepare_inputs(self, x: torch.Tensor):
        return x
"""

MODELS = """
import torch
from base import Generator


class ModelA(Generator):
    def prepare_inputs(self, x: torch.Tensor):
        return x + x.sum().item()


class ModelB(Generator):
    def prepare_inputs(self, x: torch.Tensor):
        return x - x.max().item()


class ModelC(Generator):
    def prepare_inputs(self, x: torch.Tensor):
        return x / x.min().item()


class ModelD(Generator):
    def generate(self, x: torch.Tensor, steps: int):
        return super().generate(x, steps)

    def prepare_inputs(self, x: torch.Tensor):
        return x * x.mean().item()
"""

HOOKS = {"ModelA": 8, "ModelB": 13, "ModelC": 18, "ModelD": 26}

RUNNER = """
import torch
from models import ModelA


class Runner:
    def __init__(self):
        self.model = ModelA()

    def decode(self, x: torch.Tensor):
        return self.model.generate(x, 4)
"""


def hook_lines(found) -> set[int]:
    return {d.start.line for d in found if d.path.endswith("models.py") and d.code == "GS101"}


@pytest.mark.parametrize("region, model", [("ModelA.generate", "ModelA"), ("ModelD.generate", "ModelD")])
def test_a_region_on_one_models_generate_reports_that_models_hook_only(tmp_path, region, model):
    found = project_diagnostics(tmp_path, {"base.py": BASE, "models.py": MODELS}, regions=(region,))
    assert hook_lines(found) == {HOOKS[model]}


def test_a_model_built_in_the_same_project_runs_its_own_hook_only(tmp_path):
    found = project_diagnostics(tmp_path, {"base.py": BASE, "models.py": MODELS, "runner.py": RUNNER},
                                regions=("Runner.decode",))
    assert hook_lines(found) == {HOOKS["ModelA"]}


def test_a_region_on_the_shared_loop_itself_reaches_every_hook(tmp_path):
    found = project_diagnostics(tmp_path, {"base.py": BASE, "models.py": MODELS}, regions=("Generator.generate",))
    assert hook_lines(found) == set(HOOKS.values())


VARIANTS = """
import torch


class Variant:
    @staticmethod
    def forward(module, x):
        raise NotImplementedError


class Dora(Variant):
    @staticmethod
    def forward(module, x):
        return x * x.norm().item()


class Unused(Variant):
    @staticmethod
    def forward(module, x):
        print(x)
        return x


def resolve(config) -> Variant:
    return Dora() if config.use_dora else None


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.variant: dict[str, Variant] = {}

    def add(self, name, variant):
        self.variant[name] = variant

    def forward(self, x: torch.Tensor):
        for name in self.variant:
            x = self.variant[name].forward(self, x)
        return x
"""


def test_an_abstract_method_runs_the_overrides_of_the_subclasses_the_code_constructs(tmp_path):
    found = {(d.path.rpartition("/")[2], d.start.line, d.code)
             for d in project_diagnostics(tmp_path, {"layer.py": VARIANTS}, regions=("Linear.forward",))}
    assert ("layer.py", 14, "GS101") in found  # Dora, which `resolve` makes
    assert not any(line == 20 for _, line, _ in found)  # Unused: no code makes one


def test_an_abstract_method_no_code_constructs_a_subclass_of_runs_every_override(tmp_path):
    # a library whose users build the memory (`RandomMemory(...)`): any of the few overrides runs
    library = VARIANTS.replace("return Dora() if config.use_dora else None", "return None")
    found = {(d.path.rpartition("/")[2], d.start.line, d.code)
             for d in project_diagnostics(tmp_path, {"layer.py": library}, regions=("Linear.forward",))}
    assert ("layer.py", 14, "GS101") in found
    assert any(line == 20 for _, line, _ in found)


CONTROLLERS = """
import torch


class StepSizeController(torch.nn.Module):
    def init(self, y):
        raise NotImplementedError()

    def adapt(self, y, err):
        raise NotImplementedError()


class Integral(torch.nn.Module):
    def init(self, y):
        return torch.tensor(1e-6, device=y.device)

    def adapt(self, y, err):
        torch.cuda.synchronize()
        return y * err


class Lookalike(torch.nn.Module):
    def adapt(self, y, err):
        torch.cuda.synchronize()
        return y


class Solver:
    def __init__(self, controller: StepSizeController):
        self.controller = controller

    def solve(self, y: torch.Tensor):  # graphsafe: region
        dt = self.controller.init(y)
        return self.controller.adapt(y, dt)
"""


def test_a_class_built_to_an_abstract_classs_shape_runs_where_that_class_is_declared(tmp_path):
    found = {(d.start.line, d.code) for d in project_diagnostics(tmp_path, {"solver.py": CONTROLLERS})}
    assert (15, "GS402") in found  # Integral.init: defines every bodiless method of StepSizeController
    assert (18, "GS106") in found


def test_a_class_with_only_some_of_the_methods_is_not_taken_for_it(tmp_path):
    found = {(d.start.line, d.code) for d in project_diagnostics(tmp_path, {"solver.py": CONTROLLERS})}
    assert not any(line == 24 for line, _ in found)
