"""Per-step numbers around target-network updates and schedule objects (GS301), the
neighbours of the counter branch `if self.updates % cfg.target_every == 0: polyak(...)`
that retired held-out set 8 showed: networks built by helpers from another file, whose kind
the file does not know, and schedules kept in objects of the program.

Each case has a look-alike that must stay silent.
"""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics, lines_of


def gs301_lines(source: str) -> list[int]:
    return lines_of(source, "GS301")  # every use, grouped or not


TARGET_UPDATE = """
import torch
from nets import build_q, polyak


class Agent:
    def __init__(self, device):
        self.q = build_q().to(device)
        self.q_target = build_q().to(device)
        self.history = []
        self.updates = 0

    def update(self, x: torch.Tensor):  # graphsafe: region
        self.updates += 1
        if self.updates % 4 == 0:
            {body}
        return x
"""


def test_a_counter_branch_that_updates_a_target_built_elsewhere_records_device_work():
    # in-place kernels on the parameters of networks whose kind this file does not know
    body = "for p, tp in zip(self.q.parameters(), self.q_target.parameters()):\n                tp.data.lerp_(p.data, 0.01)"
    assert gs301_lines(TARGET_UPDATE.format(body=body)) == [15]
    # a hard update copies the weights: kernels too
    assert gs301_lines(TARGET_UPDATE.format(body="self.q_target.load_state_dict(self.q.state_dict())")) == [15]


def test_a_counter_branch_that_hands_networks_placed_on_the_device_to_a_helper_records_device_work():
    # `polyak` lives in another file; the networks were built there too, then moved to the device
    assert gs301_lines(TARGET_UPDATE.format(body="polyak(self.q_target, self.q, 0.005)")) == [15]


def test_a_counter_branch_that_hands_host_lists_to_a_helper_is_silent():
    assert gs301_lines(TARGET_UPDATE.format(body="polyak(self.history, self.history, 0.005)")) == []


def test_a_counter_branch_that_only_moves_host_values_is_silent():
    # GS503 reports the append; the branch itself records no device work
    assert gs301_lines(TARGET_UPDATE.format(body="self.history.append(len(self.history))")) == []


SCHEDULED = """
import torch
from schedules import Linear


class Agent:
    def __init__(self, cfg):
        self.cfg = cfg
        self.updates = 0
        self.sched = Linear(1.0, 0.1, 100)

    def update(self, x: torch.Tensor):  # graphsafe: region
        self.updates += 1
        return x * self.sched.value({arg})
"""


def test_a_schedule_objects_method_given_a_counter_is_a_per_step_number():
    assert gs301_lines(SCHEDULED.format(arg="self.updates")) == [14]


def test_a_schedule_objects_method_given_a_config_value_is_not():
    assert gs301_lines(SCHEDULED.format(arg="self.cfg.t0")) == []


HELPER_BELOW = """
import torch


class Agent:
    def __init__(self, opt, cfg):
        self.opt = opt
        self.cfg = cfg
        self.base = cfg.lr
        self.updates = 0

    def update(self, x: torch.Tensor):  # graphsafe: region
        self.updates += 1
        lr = self.lr_at({arg})
        for g in self.opt.param_groups:
            g["lr"] = lr
        return x

    def lr_at(self, t):
        warm = min(1.0, t / 100)
        return self.base * warm * 0.99 ** t
"""


def test_an_unannotated_helper_defined_below_computes_a_per_step_number_from_a_counter():
    assert gs301_lines(HELPER_BELOW.format(arg="self.updates")) == [16]
    # defined above the region: the same
    above = HELPER_BELOW.format(arg="self.updates")
    helper = above[above.index("    def lr_at"):]
    above = above.replace(helper, "").replace("    def update", helper + "\n    def update")
    assert gs301_lines(above) == [20]


def test_an_unannotated_helper_given_a_config_value_is_step_invariant():
    assert gs301_lines(HELPER_BELOW.format(arg="self.cfg.t0")) == []


FIELD = """
import torch
from dataclasses import dataclass


@dataclass
class State:
    beta: float = 1.0


class Agent:
    def __init__(self):
        self.state = State()

    def update(self, x: torch.Tensor):  # graphsafe: region
        return x * self.state.beta

    def train(self, xs, decay: float):
        {train}
"""


def test_a_dataclass_field_of_this_file_decayed_in_the_driving_loop_is_per_step():
    train = "for x in xs:\n            self.state.beta *= decay"
    assert gs301_lines(FIELD.format(train=train)) == [16]


def test_a_dataclass_field_set_once_outside_a_loop_is_not():
    assert gs301_lines(FIELD.format(train="self.state.beta = decay")) == []


HELD = """
import torch


class Agent:
    def __init__(self, cfg):
        self.cfg = cfg
        self.updates = 0
        self.warmup = lambda s: min(1.0, s / 100)

    def update(self, x: torch.Tensor, opt):  # graphsafe: region
        self.updates += 1
        for g in opt.param_groups:
            g["lr"] = self.warmup({arg})
        decay = lambda t: 0.99 ** t
        return x * decay({arg})
"""


def test_lambdas_held_in_an_attribute_or_a_local_given_a_counter_are_per_step():
    assert gs301_lines(HELD.format(arg="self.updates")) == [14, 16]


def test_the_same_lambdas_given_a_config_value_are_not():
    assert gs301_lines(HELD.format(arg="self.cfg.t0")) == []
