"""Steps called with their batch spread (`self.update(*self.static, lr)`), as RL and speech
training loops write them (retired held-out set 8), and modules made by annotated builders.

Each case has a look-alike that must stay silent.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.helpers import diagnostics, project_diagnostics


def lines(source: str, code: str) -> list[int]:
    return sorted(d.start.line for d in diagnostics(textwrap.dedent(source)) if d.code == code)


AFTER_STAR = """
import torch


class Agent:
    def __init__(self, cfg):
        self.cfg = cfg

    def update(self, obs, act, {params}):
        loss = (obs * act).mean()
        return loss * w

    def capture(self, batch, w: float):
        self.static = [b.clone() for b in batch]
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.update(*self.static, {args})
"""


def test_a_number_passed_after_a_spread_batch_lands_in_the_last_parameter():
    assert lines(AFTER_STAR.format(params="w: float", args="w"), "GS301") == [11]
    # the same spread call given a config value: step-invariant
    assert lines(AFTER_STAR.format(params="w: float", args="self.cfg.w"), "GS301") == []


def test_arguments_after_a_spread_count_from_the_end():
    # `w` is the last of two trailing arguments; the first is a config value
    source = AFTER_STAR.format(params="scale: float, w: float", args="self.cfg.scale, w")
    assert lines(source, "GS301") == [11]
    # swapped: the per-step value now lands in `scale`, which the body does not use
    source = AFTER_STAR.format(params="scale: float, w: float", args="w, self.cfg.w")
    assert lines(source, "GS301") == []


def test_no_slot_from_the_end_where_a_default_or_a_keyword_may_fill_it():
    # `w` has a default: the spread may be one element shorter, so which slot gets the value
    # is not known; an undeclared `w` (no default, no annotation) counts only through a slot
    source = AFTER_STAR.format(params="w=None", args="w")
    assert lines(source, "GS301") == []
    source = AFTER_STAR.format(params="w, scale", args="w, scale=2.0")
    assert lines(source, "GS301") == []


SPREAD_BRANCH = """
import torch


class Agent:
    def update(self, obs, done):
        if (done > 0).any():
            obs = obs * 2
        return obs

    def capture(self, batch):
        self.static = [b.clone() for b in batch]
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.update(*self.static)

    def train_on(self, batches):
        for batch in batches:
            if self.graph is None:
                self.update(*batch)
            {other}
"""


def test_a_spread_of_cloned_tensors_types_the_parameters_despite_an_eager_fallback():
    # the eager fallback spreads a batch of unknown elements: it says nothing about `done`
    assert lines(SPREAD_BRANCH.format(other="pass"), "GS201") == [7]


def test_a_site_that_passes_something_else_still_decides():
    # another caller passes a Python number as `done`: not known to be a tensor
    assert lines(SPREAD_BRANCH.format(other="self.update(batch[0], 0)"), "GS201") == []
    # ... before a spread of unknown contents too
    assert lines(SPREAD_BRANCH.format(other="self.update(batch[0], 0, *batch[2:])"), "GS201") == []
    # every site spreads unknown elements: nothing is known
    source = SPREAD_BRANCH.format(other="pass").replace("[b.clone() for b in batch]", "list(batch)")
    assert lines(source, "GS201") == []


BUILDER = """
import copy
import torch
from torch import nn
from targets import polyak


def mlp(i: int, o: int) -> {returns}:
    return nn.Sequential(nn.Linear(i, o))


class Agent:
    def __init__(self, device):
        self.q = mlp(3, 1)
        self.q_target = copy.deepcopy(self.q)
        self.updates = 0

    def update(self, x: torch.Tensor):  # graphsafe: region
        self.updates += 1
        if self.updates % 2 == 0:
            polyak(self.q_target, self.q, 0.005)
        if self.q(x):
            x = x * 2
        return x
"""


def test_a_module_from_an_annotated_builder_makes_a_counter_branch_record_device_work():
    source = BUILDER.format(returns="nn.Module")
    assert lines(source, "GS301") == [20]
    assert lines(source, "GS201") == [22]  # calling the module gives a tensor


def test_a_builder_annotated_with_something_else_is_no_module():
    source = BUILDER.format(returns="dict")
    assert lines(source, "GS301") == []
    assert lines(source, "GS201") == []


TRAINER = """
import torch


class Trainer:
    def __init__(self, model, opt):
        self.model = model
        self.opt = opt

    def step(self, x, y, lr: float, mom: float):
        for g in self.opt.param_groups:
            g.update(lr=lr)
        self.opt.param_groups[0].update({"momentum": mom})
        return (self.model(x) - y).pow(2).mean()
"""

RUNNER = """
import torch
from trainer import Trainer


class Runner:
    def __init__(self, trainer: Trainer, cfg):
        self.trainer = trainer
        self.cfg = cfg

    def capture(self, batch, lr: float):
        self.static = [b.clone() for b in batch]
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.out = self.trainer.step(*self.static, {args})
"""


def project(tmp_path: Path, files: dict[str, str], code: str) -> set[tuple[str, int]]:
    return {(Path(d.path).name, d.start.line) for d in project_diagnostics(tmp_path, files) if d.code == code}


def test_a_spread_call_into_another_file_fills_param_groups_through_update(tmp_path):
    files = {"trainer.py": TRAINER, "run.py": RUNNER.format(args="lr, lr")}
    assert project(tmp_path, files, "GS301") == {("trainer.py", 12), ("trainer.py", 13)}


def test_the_same_call_given_config_values_is_silent(tmp_path):
    files = {"trainer.py": TRAINER, "run.py": RUNNER.format(args="self.cfg.lr, self.cfg.momentum")}
    assert project(tmp_path, files, "GS301") == set()


def test_a_comprehension_loop_variable_does_not_take_an_outer_names_kind():
    # `x` is a tensor outside; inside the comprehension it is an element of `names`
    source = """
    import torch


    def step(names: list, n: int):  # graphsafe: region
        x = torch.zeros(3)
        ys = [x for x in names]
        for y in ys:
            if y:
                pass
        zs = [x.clone() for x in names]
        for z in zs:
            if z:
                pass
        return x
    """
    assert lines(source, "GS201") == [13]  # only the clones are tensors


PARTIAL = """
import functools
import torch


def scaled(x: torch.Tensor, w: float):
    return x * w


def main(xs, ws, cfg):
    for w in ws:
        f = functools.partial(scaled, w={value})
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            f(xs[0])
"""


def test_a_number_bound_by_functools_partial_reaches_the_captured_call():
    # the captured call goes through the partial to `scaled`, with `w` from the driving loop
    assert lines(PARTIAL.format(value="w"), "GS301") == [7]


def test_a_config_value_bound_by_functools_partial_is_step_invariant():
    assert lines(PARTIAL.format(value="cfg.w"), "GS301") == []
