"""Shapes of the retired ninth set (dino_train) the analyzer missed, each beside a look-alike
that must stay silent:

- `self.student, self.teacher = build(cfg)` with `def build(cfg) -> tuple[Student, Teacher]`:
  the annotation names each element's class, so the call graph follows both;
- `for name, p in model.named_parameters()` (also under `enumerate`) binds a tensor to `p`;
- a guard clause with a bare `return` before in-place tensor work (`if epoch >= k: return`);
- a number picked by a `-> float` helper from a host list by its parameter is reported where it
  reaches tensor math, not at the list index (an index read from a counter stays the place);
- `x = self.embed(x)` then `x = torch.cat((cls, x), dim=1)`: no growing buffer (GS404).
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import lines_of, project_diagnostics


found = lines_of  # the lines where a code is reported


def project(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, int, str]]:
    return {(Path(d.path).name, d.start.line, d.code) for d in project_diagnostics(tmp_path, files)}


MODELS = """\
import torch.nn as nn


class Syncing(nn.Module):
    def forward(self, x):
        return x.sum().item()


class Quiet(nn.Module):
    def forward(self, x):
        return x * 2


def build_pair(cfg) -> tuple[Syncing, Quiet]:
    student = Syncing()
    teacher = Quiet()
    return student, teacher
"""


def test_tuple_annotated_factory_is_followed_per_element(tmp_path):
    got = project(tmp_path, {"models.py": MODELS, "train.py": """\
        from models import build_pair


        class Trainer:
            def __init__(self, cfg):
                self.student, self.teacher = build_pair(cfg)

            def step(self, x):  # graphsafe: region
                return self.student(x)
        """})
    assert ("models.py", 6, "GS101") in got


def test_tuple_annotated_factory_quiet_element_stays_silent(tmp_path):
    got = project(tmp_path, {"models.py": MODELS, "train.py": """\
        from models import build_pair


        class Trainer:
            def __init__(self, cfg):
                self.student, self.teacher = build_pair(cfg)

            def step(self, x):  # graphsafe: region
                return self.teacher(x)
        """})
    assert not any(code == "GS101" for _, _, code in got)


def test_named_parameters_binds_the_tensor():
    source = """\
        import torch
        import torch.nn as nn


        def clip(model: nn.Module, c: float):  # graphsafe: region
            for _, p in model.named_parameters():
                norm = p.grad.data.norm(2)
                if c / (norm + 1e-6) < 1:
                    p.grad.data.mul_(0.5)
        """
    assert found(source, "GS201") == [8]


def test_named_parameters_name_test_stays_silent():
    source = """\
        import torch
        import torch.nn as nn


        def freeze(model: nn.Module):  # graphsafe: region
            for name, p in model.named_parameters():
                if "last_layer" in name and p.grad is not None:
                    p.grad.zero_()
        """
    assert found(source, "GS201") == []


GUARD = """\
import torch
import torch.nn as nn


def cancel(epoch: int, model: nn.Module, freeze: int) -> None:
    if epoch >= freeze:
        return
    for n, p in model.named_parameters():
        if "last" in n and p.grad is not None:
            p.grad.zero_()


class Trainer:
    def __init__(self, model, cfg):
        self.model = model
        self.cfg = cfg
        self.epoch = 0

    def step(self, x):  # graphsafe: region
        cancel({arg}, self.model, 3)

    def fit(self, it):
        self.epoch = it // 10
"""


def test_bare_return_guard_on_a_per_step_number():
    assert found(GUARD.format(arg="self.epoch"), "GS301") == [6]


def test_bare_return_guard_on_a_config_value_stays_silent():
    assert found(GUARD.format(arg="self.cfg.freeze_epochs"), "GS301") == []


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


def test_enumerate_of_named_parameters_binds_the_tensor():
    source = """\
        import torch
        import torch.nn as nn


        def check(model: nn.Module):  # graphsafe: region
            for i, (name, p) in enumerate(model.named_parameters()):
                if p.sum() > 0:
                    p.mul_(0.5)
                if i > 2 and name.endswith("bias"):
                    p.zero_()
        """
    assert found(source, "GS201") == [7]


def test_unannotated_helper_still_reports_the_index():
    # without the annotation the table may be a tensor: the index is the place
    assert found(TEMPERATURE.replace(" -> {returns}", ""), "GS301") == [12]


def test_cat_onto_a_rebound_parameter_is_not_a_growing_buffer():
    source = """\
        import torch


        def forward(self, x: torch.Tensor, cache: torch.Tensor):  # graphsafe: region
            x = self.embed(x)
            x = torch.cat((self.cls, x), dim=1)
            cache = torch.cat((cache, x), dim=1)
            return x, cache
        """
    assert found(source, "GS404") == [7]
