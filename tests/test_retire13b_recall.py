"""Shapes of the retired thirteenth set (graphsage_train, hifigan_train, reward_model,
consistency_distill) the analyzer missed or over-reported, each beside a look-alike that must
stay silent:

- `self.table[ids.cpu()].to(ids.device)`: rows picked with a host index are on the host (or,
  for a device table, the index is copied over): GS402 either way, also through a local
  (`cpu_ids = ids.cpu()` earlier in the function); a device index is silent;
- `with torch.autocast(...): trainer.capture(x)`: a method of a class of this file called on an
  instance known to be of it (annotation, constructor, attribute) is looked into for the
  capture (GS702), and so are the helpers it calls on its own `self`, a few calls deep; a
  method that does not capture is silent;
- `if self.updates % k == 0: self.model.head.weight.data.clamp_(-5, 5)`: an in-place tensor op
  on a weight reached through a module is recorded work, so the per-step branch is GS301 (also
  through a property, a method or a local holding the comparison: `if self.should_eval:`,
  `flag = self.updates % k == 0; if flag:`); the same branch on a
  step-invariant setting is silent;
- `self.log = torch.vstack([self.log, x])`: every concatenation onto itself (vstack, hstack,
  concat, concatenate, row_stack...) is GS404 only, as `torch.cat` already was; a sliding
  window `torch.vstack([self.log[1:], x])` is still GS401.
"""

from __future__ import annotations

import pytest

from tests.helpers import lines_of

found = lines_of  # the lines where a code is reported

# ------------------------------------------------------------------------------ GS402

CACHE = """\
import torch


class FeatureCache:
    def __init__(self, host_feats: torch.Tensor, device):
        self.host_feats = host_feats
        self.device = device

    def gather(self, ids: torch.Tensor):  # graphsafe: region
        index = ids.argmax(-1)
        rows = {expr}
        return rows
"""


@pytest.mark.parametrize("expr", [
    "self.host_feats[ids.cpu()].to(ids.device)",
    "self.host_feats[ids.to('cpu')].to(self.device)",
    "self.host_feats[ids.cpu()].cuda()",
    "self.host_feats[index.cpu(), :].to(device=ids.device)",
])
def test_rows_picked_with_a_host_index_and_moved_to_the_gpu(expr):
    assert found(CACHE.format(expr=expr), "GS402") == [11]


@pytest.mark.parametrize("expr", [
    "self.host_feats[ids].to(ids.device)",  # a device index: a device table's rows
    "self.host_feats[index].cuda()",
    "self.host_feats[ids.cpu()]",  # gathered on the host and kept there (GS103 reports the copy)
    "self.host_feats[ids.cpu()].to(torch.float16)",  # a dtype, not a device
])
def test_rows_picked_with_a_device_index_or_left_on_the_host_are_silent(expr):
    assert found(CACHE.format(expr=expr), "GS402") == []


LOCAL_INDEX = """\
import torch


class FeatureCache:
    def __init__(self, host_feats: torch.Tensor):
        self.host_feats = host_feats

    def gather(self, ids: torch.Tensor):  # graphsafe: region
        picked = ids.cpu()
        {rebind}
        return self.host_feats[picked].to(ids.device)
"""


def test_rows_picked_with_a_local_bound_to_a_host_copy():
    assert found(LOCAL_INDEX.format(rebind="pass"), "GS402") == [11]


def test_a_local_rebound_to_a_device_tensor_before_the_gather_is_silent():
    assert found(LOCAL_INDEX.format(rebind="picked = ids.argmax(-1)"), "GS402") == []


# ------------------------------------------------------------------------------ GS702

TRAINER = """\
import torch


class Trainer:
    def __init__(self):
        self.graph = torch.cuda.CUDAGraph()

    def step(self, x):
        return x * 2

    def capture(self, x):
        with torch.cuda.graph(self.graph):
            return self.step(x)

    def warm(self, x):
        return self.step(x)


class Runner:
    def __init__(self):
        self.trainer = Trainer()

    def go(self, x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return self.trainer.{method}(x)


def fit(trainer: Trainer, x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = trainer.{method}(x)
    other = Trainer()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = other.{method}(x)
    return y
"""


def test_autocast_around_a_capture_method_called_on_an_instance():
    # an annotated parameter, a local built by the constructor, an attribute set in __init__
    assert found(TRAINER.format(method="capture"), "GS702") == [24, 29, 32]


def test_autocast_around_a_method_that_does_not_capture_is_silent():
    assert found(TRAINER.format(method="warm"), "GS702") == []


def test_an_instance_of_a_class_of_another_name_is_not_looked_into():
    # `trainer` of unknown class: its `capture` may be anything
    source = TRAINER.format(method="capture").replace("trainer: Trainer", "trainer")
    assert 29 not in found(source, "GS702")


NESTED = """\
import torch


class Trainer:
    def __init__(self):
        self.graph = torch.cuda.CUDAGraph()

    def _capture(self, x):
        with torch.cuda.graph(self.graph):
            return x * 2

    def _warm(self, x):
        return x * 2

    def setup(self, x):
        self._warm(x)
        return self.{inner}(x)


def fit(trainer: Trainer, x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return trainer.setup(x)
"""


def test_autocast_around_a_method_whose_own_helper_captures():
    assert found(NESTED.format(inner="_capture"), "GS702") == [21]


def test_autocast_around_a_method_whose_helpers_do_not_capture_is_silent():
    assert found(NESTED.format(inner="_warm"), "GS702") == []


# ------------------------------------------------------------------------------ GS301

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


# ------------------------------------------------------------------------------ GS404 / GS401

LOG = """\
import torch


class Tracker(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.log = torch.zeros(0, 4)

    def forward(self, x):  # graphsafe: region
        self.log = {value}
        return x
"""


@pytest.mark.parametrize("func", ["cat", "concat", "concatenate", "stack", "vstack", "hstack", "row_stack"])
def test_a_buffer_joined_onto_itself_is_growth_only(func):
    source = LOG.format(value=f"torch.{func}([self.log, x[None]])")
    assert found(source, "GS404") == [10]
    assert found(source, "GS401") == []


@pytest.mark.parametrize("func", ["vstack", "concatenate"])
def test_a_sliding_window_of_fixed_size_is_still_a_rebinding(func):
    source = LOG.format(value=f"torch.{func}([self.log[1:], x[None]])")
    assert found(source, "GS404") == []
    assert found(source, "GS401") == [10]
