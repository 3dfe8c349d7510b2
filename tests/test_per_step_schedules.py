"""Per-step values through schedule objects and base classes (GS301), each beside a look-alike
that must stay silent:

- calling a schedule object of the program (its `__call__`) with a per-step number,
  `clip = self.clip_range(self.progress)`, gives a per-step number, like a schedule method
  (`self.sched.value(self.updates)`); also where the attribute first holds the number the
  schedule is built from (`self.clip_range = clip_range` in `__init__`, `self.clip_range =
  Schedule(self.clip_range)` in a setup method); given a per-run setting it stays silent;
- an attribute a subclass reads but never sets is its base class's: where the base, in another
  file, updates it between steps (`self.progress = 1.0 - done / total`), the subclass's read is
  per step; where the base sets it only in `__init__` it is a per-run setting.
"""

from __future__ import annotations

from tests.helpers import project_findings

SCHEDULE = """
class Schedule:
    def __init__(self, value: float):
        self.value = value

    def __call__(self, progress: float) -> float:
        return self.value * progress
"""

BASE = """
class Algorithm:
    def __init__(self, total: int):
        self.total = total
        self.progress = 1.0

    def {method}(self, done: int):
        self.{target} = {value}
"""

PPO = """
import torch
from algorithm import Algorithm
from schedule import Schedule


class PPO(Algorithm):
    def __init__(self, total: int, clip_range: float = 0.2):
        super().__init__(total)
        self.clip_range = clip_range
        self.setup()

    def setup(self):
        self.clip_range = Schedule(self.clip_range)

    def train(self, ratio: torch.Tensor, adv: torch.Tensor):  # graphsafe: region
        clip = self.clip_range({arg})
        return adv * torch.clamp(ratio, 1 - clip, 1 + clip)
"""

UPDATED = dict(method="update_progress", target="progress", value="1.0 - float(done) / float(self.total)")


def _findings(tmp_path, base: dict, arg: str) -> set:
    files = {"schedule.py": SCHEDULE, "algorithm.py": BASE.format(**base), "ppo.py": PPO.format(arg=arg)}
    return project_findings(tmp_path, files, "GS301")


def test_a_schedule_object_called_with_a_progress_its_base_class_updates_is_per_step(tmp_path):
    assert _findings(tmp_path, UPDATED, "self.progress") == {("ppo.py", 18, "GS301")}


def test_a_schedule_object_called_with_a_per_run_setting_is_silent(tmp_path):
    assert _findings(tmp_path, UPDATED, "self.total") == set()


def test_a_base_class_attribute_set_only_in_init_is_silent(tmp_path):
    # the base's other method sets something else: `progress` is a per-run setting
    base = dict(method="note", target="last_done", value="done")
    assert _findings(tmp_path, base, "self.progress") == set()


def test_a_schedule_object_of_the_same_file_called_with_a_counter_is_per_step(tmp_path):
    source = SCHEDULE + """
import torch


class Agent:
    def __init__(self):
        self.explore = Schedule(0.5)
        self.updates = 0

    def act(self, q: torch.Tensor):  # graphsafe: region
        self.updates += 1
        return q * self.explore(self.updates)
"""
    assert project_findings(tmp_path, {"agent.py": source}, "GS301") == {("agent.py", 19, "GS301")}


def test_a_module_called_with_a_counter_and_a_tensor_is_not_a_schedule(tmp_path):
    source = """
import torch


class Scale(torch.nn.Module):
    def forward(self, x, step):
        return x * 2


class Agent:
    def __init__(self):
        self.scale = Scale()
        self.updates = 0

    def act(self, q: torch.Tensor):  # graphsafe: region
        self.updates += 1
        y = self.scale(q, self.updates)
        return q + y
"""
    assert ("agent.py", 18, "GS301") not in project_findings(tmp_path, {"agent.py": source}, "GS301")


# ----------------------------------------- param-group keys rewritten between steps

OPTIMIZER = """
import torch


def momentum_update(grads, bufs, beta=0.9):
    torch._foreach_mul_(bufs, beta)
    return bufs


class HybridSGD(torch.optim.Optimizer):
    def step(self, closure=None):  # graphsafe: region
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            lr, momentum = group["lr"], group["momentum"]
            bufs = [self.state[p]["buf"] for p in params]
            momentum_update([p.grad for p in params], bufs, beta=momentum)
            torch._foreach_add_(params, bufs, alpha=-lr)
"""

TRAINER = """
import numpy as np


class Trainer:
    def __init__(self, optimizer):
        self.optimizer = optimizer
        for x in self.optimizer.param_groups:
            x["momentum"] = float(np.clip(0.9, 0.0, 1.0))

    def train(self, loader):
        for ni, batch in enumerate(loader):
            for x in self.optimizer.param_groups:
                x["momentum"] = {value}
            self.optimizer.step()
"""


def _optimizer_findings(tmp_path, value: str) -> set:
    files = {"hybrid.py": OPTIMIZER, "trainer.py": TRAINER.format(value=value)}
    return {(f, line) for f, line, _ in project_findings(tmp_path, files, "GS301")}


def test_a_param_group_key_a_warm_up_rewrites_is_per_step_in_the_optimizer_step(tmp_path):
    got = _optimizer_findings(tmp_path, "float(np.interp(ni, [0, 100], [0.8, 0.9]))")
    # the momentum given to a helper (line 6) and the learning rate (line 17) both
    assert got == {("hybrid.py", 6), ("hybrid.py", 17)}


def test_a_param_group_key_set_to_a_literal_or_only_in_init_is_silent(tmp_path):
    assert _optimizer_findings(tmp_path, "0.9") == {("hybrid.py", 17)}


SETUP = """
class Trainer:
    def __init__(self, optimizer, cfg):
        self.optimizer = optimizer
        self.cfg = cfg

    def setup_optimizer(self):
        momentum = self.cfg.momentum * self.cfg.scale
        for group in self.optimizer.param_groups:
            group["momentum"] = momentum
"""

SCHEDULER = """
class MomentumScheduler:
    def __init__(self, optimizer, momentums):
        self.optimizer = optimizer
        self.momentums = momentums
        self.last_epoch = 0

    def step(self):
        self.last_epoch += 1
        for group in self.optimizer.param_groups:
            group["momentum"] = self.momentum_at(self.last_epoch)

    def momentum_at(self, epoch):
        return self.momentums[min(epoch, len(self.momentums) - 1)]
"""


def test_a_param_group_key_a_setup_function_writes_once_is_a_per_run_setting(tmp_path):
    files = {"hybrid.py": OPTIMIZER, "setup.py": SETUP}
    found = {(f, line) for f, line, _ in project_findings(tmp_path, files, "GS301")}
    assert found == {("hybrid.py", 17)}  # the learning rate only: the momentum is set once


def test_a_param_group_key_a_scheduler_step_rewrites_is_per_step(tmp_path):
    files = {"hybrid.py": OPTIMIZER, "sched.py": SCHEDULER}
    found = {(f, line) for f, line, _ in project_findings(tmp_path, files, "GS301")}
    assert found == {("hybrid.py", 6), ("hybrid.py", 17)}


LR_STEP = """\
import torch
{setup}


class Recipe:
    def __init__(self, model, optimizer, scheduler):
        self.model, self.optimizer = model, optimizer
        self.{name} = scheduler

    def train_step(self, batch):  # graphsafe: region
        self.model(batch).sum().backward()
        self.optimizer.step()
        self.{name}.step()
"""


def lr_steps(tmp_path, setup="", name="lr_scheduler"):
    return {line for _, line, _ in project_findings(tmp_path, {"recipe.py": LR_STEP.format(setup=setup, name=name)}, "GS302")}


def test_a_learning_rate_scheduler_stepped_in_the_region_freezes_the_rate(tmp_path):
    assert lr_steps(tmp_path) == {13}


def test_an_object_named_otherwise_whose_class_is_unknown_stays_silent(tmp_path):
    assert lr_steps(tmp_path, name="ema") == set()


def test_a_project_schedule_class_is_followed_into_not_guessed(tmp_path):
    # the call graph reads the class's own `step`: a constant one changes nothing between steps
    setup = "\n\nclass Warmup:\n    def step(self):\n        return None\n\n\ndef build(opt):\n    return Warmup()\n"
    source = LR_STEP.format(setup=setup, name="lr_scheduler").replace(
        "self.lr_scheduler = scheduler", "self.lr_scheduler = Warmup()")
    assert {line for _, line, _ in project_findings(tmp_path, {"recipe.py": source}, "GS302")} == set()
