"""Per-step counters (GS301): where a step counter is reported and what it reaches, each case
beside a look-alike that must stay silent:

- a number picked by a `-> float` helper from a host list by a per-step parameter is reported
  where it reaches tensor math, not at the list index; an `-> int` or unannotated helper, or a
  helper indexing by a counter of its own, keeps the index as the place;
- a branch on a counter (`if self.updates % k == 0:`) around an in-place tensor op on a weight
  reached through a module (`self.model.head.weight.data.clamp_(...)`) is recorded work, so the
  branch is per step, also through a property, a method or a local holding the comparison; the
  same branch on a step-invariant setting, or around host work only, is silent;
- a counter held by another object (`self.state.step`, `self.trainer.step`), given to a helper
  (`lr_at(...)`) or a schedule's method (`self.sched.value(...)`), where the other class
  advances it per step; silent where nothing advances it, or where the helper is given tensors
  and a setting.
"""

from __future__ import annotations

import pytest

from tests.helpers import lines_of, project_findings


found = lines_of  # the lines where a code is reported
project = project_findings  # (file name, line, code) of each diagnostic of a small program


# ------------------------------------------------ numbers picked from host lists

TEMPERATURE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Loss(nn.Module):
    def __init__(self, table):
        super().__init__()
        self.table = table

    def temp(self, epoch: int) -> {returns}:
        return self.table[min(epoch, len(self.table) - 1)]

    def forward(self, t: torch.Tensor, epoch: int):
        temp = self.temp(epoch)
        return F.softmax(t / temp, dim=-1)


class Trainer:
    def __init__(self):
        self.loss = Loss([0.04, 0.07])
        self.epoch = 0

    def step(self, x):  # graphsafe: region
        return self.loss(x, self.epoch)

    def fit(self, it):
        self.epoch = it // 10
"""


def test_float_helper_reports_the_use_not_the_host_list_index():
    assert found(TEMPERATURE.format(returns="float"), "GS301") == [16]


def test_int_helper_given_a_parameter_keeps_the_index():
    # `-> int` given a parameter is most often a dimension: its result is not followed, so the
    # index stays the place reported
    assert found(TEMPERATURE.format(returns="int"), "GS301") == [12]


COUNTER_TABLE = """\
import torch
import torch.nn as nn


class Loss(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = [0.04, 0.07]
        self.epoch = 0

    def forward(self, t: torch.Tensor):  # graphsafe: region
        return t / self.temp()

    def temp(self) -> float:
        return self.table[min(self.epoch, 1)]

    def set_epoch(self, e):
        self.epoch = e
"""


def test_float_helper_indexed_by_a_counter_reports_the_index_whatever_the_order():
    # a caller walked before the helper cannot know what it returns: the index is the place
    assert found(COUNTER_TABLE, "GS301") == [15]


def test_unannotated_helper_still_reports_the_index():
    # without the annotation the table may be a tensor: the index is the place
    assert found(TEMPERATURE.replace(" -> {returns}", ""), "GS301") == [12]


# ----------------------------------------- counter branches around in-place work

EVAL = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 1)


class Trainer:
    def __init__(self, cfg, model):
        self.cfg = cfg
        self.model = model
        self.updates = 0

    def train_step(self, x: torch.Tensor):  # graphsafe: region
        loss = self.model(x).mean()
        if {condition}:
            {work}
        self.updates += 1
        return loss
"""


@pytest.mark.parametrize("work", [
    "self.model.head.weight.data.clamp_(-5.0, 5.0)",
    "self.model.head.bias.data.normal_(0.0, 0.01)",
    "self.model.head.weight.data.clip_(-1.0, 1.0)",
])
def test_a_counter_branch_around_in_place_work_on_a_weight(work):
    source = EVAL.format(condition="self.updates % self.cfg.eval_every == 0", work=work)
    assert found(source, "GS301") == [19]


def test_a_step_invariant_branch_around_the_same_work_is_silent():
    source = EVAL.format(condition="self.cfg.clamp_head", work="self.model.head.weight.data.clamp_(-5.0, 5.0)")
    assert found(source, "GS301") == []


def test_a_counter_branch_around_host_work_only_is_silent():
    source = EVAL.format(condition="self.updates % self.cfg.eval_every == 0", work="self.cfg.note = 'eval'")
    assert found(source, "GS301") == []


PROPERTY = """\
import torch


class Trainer:
    def __init__(self, cfg, model):
        self.cfg = cfg
        self.model = model
        self.updates = 0

    @property
    def should_eval(self) -> bool:
        return {flag}

    def train_step(self, x: torch.Tensor):  # graphsafe: region
        loss = self.model(x).mean()
        if self.should_eval:
            self.model.head.weight.data.clamp_(-5.0, 5.0)
        self.updates += 1
        return loss
"""


def test_a_property_comparing_the_counter_is_a_per_step_flag():
    assert found(PROPERTY.format(flag="self.updates % self.cfg.eval_every == 0"), "GS301") == [16]


@pytest.mark.parametrize("flag", ["self.cfg.eval_every > 0", "self.cfg.head is None"])
def test_a_property_comparing_settings_only_is_silent(flag):
    assert found(PROPERTY.format(flag=flag), "GS301") == []


LOCAL_FLAG = """\
import torch


class Trainer:
    def __init__(self, cfg, model):
        self.cfg = cfg
        self.model = model
        self.updates = 0

    def should_eval(self) -> bool:
        return self.updates % self.cfg.eval_every == 0

    def train_step(self, x: torch.Tensor):  # graphsafe: region
        loss = self.model(x).mean()
        flag = {flag}
        if flag:
            self.model.head.weight.data.clamp_(-5.0, 5.0)
        self.updates += 1
        return loss
"""


@pytest.mark.parametrize("flag", ["self.updates % self.cfg.eval_every == 0", "self.should_eval()"])
def test_a_local_or_method_flag_from_the_counter(flag):
    assert found(LOCAL_FLAG.format(flag=flag), "GS301") == [16]


@pytest.mark.parametrize("flag", ["self.cfg.eval_every == 0", "self.cfg.head is None", "(x > 0).all()"])
def test_a_flag_from_settings_or_a_tensor_is_not_gs301(flag):
    assert found(LOCAL_FLAG.format(flag=flag), "GS301") == []


# ------------------------------------------------------ another object's counter

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


# ------------------------------------------------ a field advanced through a held object of unknown class

ENGINE = """\
class State:
    def __init__(self):
        self.iteration = 0


class Engine:
    def __init__(self, update):
        self.state = State()
        self.update = update

    def run(self, batches):
        for batch in batches:
            self.state.iteration {advance}
            self.update(self, batch)
"""

STEP = """\
import torch


def make_update(model: torch.nn.Module, optimizer: torch.optim.Optimizer, every: int):
    def update(engine, batch: torch.Tensor):  # graphsafe: region
        if engine.state.iteration % every == 0:
            optimizer.zero_grad()
        loss = model(batch).sum()
        loss.backward()
        return loss.detach()
    return update
"""


def test_a_counter_advanced_through_a_held_object_is_per_step_where_its_holder_is_unknown(tmp_path):
    # ignite: `engine.state.iteration` in the update function; the engine's loop does
    # `self.state.iteration += 1`, and nothing says what `engine` is where it is read
    files = {"engine.py": ENGINE.format(advance="+= 1"), "step.py": STEP}
    assert ("step.py", 6, "GS301") in project(tmp_path, files)


def test_a_field_of_a_held_object_that_is_only_set_is_silent(tmp_path):
    files = {"engine.py": ENGINE.format(advance="= 1"), "step.py": STEP}
    assert not {f for f in project(tmp_path, files) if f[0] == "step.py" and f[1] == 6}


OPTIMIZER = """\
import math
import torch


class Opt(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self, closure=None):  # graphsafe: region
        for group in self.param_groups:
            if "step" in group:
                group["step"] += 1
            else:
                group["step"] = 1
            bc = 1 - group["beta"] ** group["step"]
            for p in group["params"]:
                state = self.state[p]
                state["n"] = state.get("n", 0) + 1
                state["seen"] = state.get("seen", torch.zeros(())) + p.sum()
                p.add_(p.grad, alpha=-0.1 / bc)
                p.mul_(math.sqrt(state["n"]))
"""


def test_counters_in_param_groups_and_optimizer_state_are_advanced_only_at_capture():
    # `group` iterates the optimizer's param groups, `state` is `self.state[p]`: both outlive the
    # step; `state["seen"]` starts as a tensor, so it is device state, not a host counter
    assert lines_of(OPTIMIZER, "GS302") == [10, 16]
    assert lines_of(OPTIMIZER, "GS301") == [18, 19]
