"""Per-step numbers and reachability found from held-out set 7 (swin_train, whisper_decode,
ddpg_her, lora_finetune, video_world_model):

- a guard clause (`if self.p == 0.0: return x`) on a per-step number chooses the tensor work
  after it (GS301);
- `self.lo, self.hi = -c, 0.0` sets each attribute; `opts.temperatures[0]` is a setting;
- code outside the class that updates an attribute from its old value (`m.p = max(f, m.p * d)`,
  `m.step += 1`) makes it per step, in a loop or not;
- `self.stages.append(nn.Sequential(Block(...)))` on an `nn.ModuleList` holds Blocks;
- `self.model.decoder(x)` runs the module held by attribute `decoder` of the model's class;
- a wrapper installed with `setattr(parent, name, Wrapper(child))` over a model's modules runs
  in the forward of the model classes callers pass (Unit.injects).

Each case has a look-alike that must stay silent.
"""

from __future__ import annotations

import pytest

from pathlib import Path

from tests.helpers import lines_of, project_diagnostics


found = lines_of  # the lines where a code is reported


def project(tmp_path: Path, files: dict[str, str], code: str) -> set[tuple[str, int]]:
    return {(Path(d.path).name, d.start.line) for d in project_diagnostics(tmp_path, files) if d.code == code}


DROP_PATH = """
import torch
import torch.nn as nn


class DropPath(nn.Module):
    def __init__(self, p: float = 0.0):
        super().__init__()
        self.p = p

    def set_rate(self, p: float) -> None:
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # graphsafe: region
        if self.p == 0.0:
            return x
        {after}
"""


def test_a_guard_clause_on_a_per_step_number_chooses_the_work_after_it():
    assert found(DROP_PATH.format(after="return x * torch.rand_like(x)"), "GS301") == [15]


def test_a_guard_clause_followed_by_host_work_only_is_silent():
    assert found(DROP_PATH.format(after="return None"), "GS301") == []


def test_a_check_that_raises_or_answers_on_the_host_picks_no_work():
    # `if p != 0.0: raise ...` / `return "p must be 0"`: a check, not a pick of recorded work
    for guard in ("raise ValueError(self.p)", 'return "p must be 0"'):
        source = DROP_PATH.replace("return x\n        {after}", guard + "\n        {after}")
        assert found(source.format(after="return x * torch.rand_like(x)"), "GS301") == []


CLAMPED = """
import torch


class Agent:
    def __init__(self, clip: float):
        self.lo, self.hi = -clip, 0.0

    def observe(self, returns: list[float]) -> None:
        {observe}

    def update(self, q: torch.Tensor) -> torch.Tensor:  # graphsafe: region
        return q.clamp(self.lo, self.hi)
"""


def test_attributes_set_by_a_tuple_assignment_then_rebound_vary():
    assert found(CLAMPED.format(observe="self.hi = min(0.0, max(returns) + 1.0)"), "GS301") == [13]


def test_attributes_set_by_a_tuple_assignment_only_in_init_are_silent():
    assert found(CLAMPED.format(observe="self.seen = len(returns)"), "GS301") == []


TEMPERATURE = """
import torch


class DecodingOptions:
    temperatures: tuple = (0.0, 0.4)


class Task:
    def __init__(self, opts: DecodingOptions):
        self.temperature = opts.temperatures[0]

    def step(self, logits: torch.Tensor) -> torch.Tensor:  # graphsafe: region
        return logits / self.temperature

    def run(self, logits: torch.Tensor, temperature: float):
        {run}
        return self.step(logits)
"""


def test_a_config_element_rebound_from_a_number_parameter_varies():
    assert found(TEMPERATURE.format(run="self.temperature = temperature"), "GS301") == [14]


def test_a_config_element_never_rebound_is_silent():
    assert found(TEMPERATURE.format(run="self.last = temperature"), "GS301") == []


WORLD_MODEL = """
import torch
import torch.nn as nn


class WorldModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tf_p = cfg.tf_start
        self.global_step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # graphsafe: region
        coin = torch.rand_like(x) < self.tf_p
        return x * coin * self.global_step
"""

WORLD_TRAINER = """
from world import WorldModel


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.model = WorldModel(cfg)

    def train_step(self, x):
        loss = self.model(x)
        m = self.model
        {updates}
        return loss
"""


def test_an_outside_update_from_the_old_value_varies_without_a_loop(tmp_path):
    updates = "m.tf_p = max(self.cfg.floor, m.tf_p * self.cfg.decay)\n        m.global_step += 1"
    files = {"world.py": WORLD_MODEL, "trainer.py": WORLD_TRAINER.format(updates=updates)}
    assert project(tmp_path, files, "GS301") == {("world.py", 13), ("world.py", 14)}


def test_an_outside_set_from_the_config_once_is_silent(tmp_path):
    updates = "m.tf_p = self.cfg.tf_start\n        m.global_step = self.cfg.start"
    files = {"world.py": WORLD_MODEL, "trainer.py": WORLD_TRAINER.format(updates=updates)}
    assert project(tmp_path, files, "GS301") == set()


STAGES = """
import torch
import torch.nn as nn


class Block(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert torch.isfinite(x).all()
        return x


class Net(nn.Module):
    def __init__(self, depths: list[int]):
        super().__init__()
        self.stages = nn.ModuleList()
        self.aux = nn.ModuleList()
        for d in depths:
            self.{container}.append(nn.Sequential(*[Block() for _ in range(d)]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # graphsafe: region
        for stage in self.stages:
            x = stage(x)
        return x
"""


def test_modules_appended_to_a_module_list_are_called_through_it():
    assert found(STAGES.format(container="stages"), "GS201") == [8]


def test_modules_appended_to_a_list_the_region_never_calls_are_silent():
    assert found(STAGES.format(container="aux"), "GS201") == []


WHOLE = """
import torch
import torch.nn as nn


class Decoder(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.isnan().any():
            x = torch.nan_to_num(x)
        return x


class Whole(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = Decoder()
{method}
"""

TASK = """
import torch
from whole import Whole


class Task:
    def __init__(self, model: Whole):
        self.model = model

    def step(self, x: torch.Tensor):  # graphsafe: region
        return self.model.decoder(x)[:, -1].float()
"""


def test_a_module_attribute_of_another_object_is_called(tmp_path):
    files = {"whole.py": WHOLE.format(method=""), "task.py": TASK}
    assert project(tmp_path, files, "GS201") == {("whole.py", 8)}


def test_a_method_of_the_same_name_wins_over_the_attribute(tmp_path):
    method = "\n    def decoder(self, x):\n        return x\n"
    files = {"whole.py": WHOLE.format(method=method), "task.py": TASK}
    assert project(tmp_path, files, "GS201") == set()


LORA = """
import torch
import torch.nn as nn


class LoRA(nn.Module):
    def __init__(self, base: {wrapped}, r: int, alpha: float):
        super().__init__()
        self.base = base
        self.scaling = alpha / r
        self.a = nn.Parameter(torch.zeros(r, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.a.t()) * self.scaling


def inject(model: nn.Module, r: int, alpha: float) -> list[LoRA]:
    adapters = []
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, {wrapped}):
                wrapped = LoRA(child, r, alpha)
                {install}
                adapters.append(wrapped)
    return adapters


def disable(adapters: list[LoRA]):
    saved = [a.scaling for a in adapters]
    for a, s in zip(adapters, saved):
        a.scaling = s * 0.0


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # graphsafe: region
        return self.q_proj(x)


def build() -> Attention:
    model = Attention()
    inject(model, 4, 8.0)
    return model
"""


def test_a_linear_wrapper_installed_with_setattr_runs_where_the_linear_is_called():
    # `inject(model, ...)` installs LoRA into Attention's module tree: LoRA.forward runs in its forward
    source = LORA.format(wrapped="nn.Linear", install="setattr(module, name, wrapped)")
    assert found(source, "GS301") == [14]


@pytest.mark.xfail(strict=True, reason="known over-approximation: module surgery (Unit.injects) installs the "
                   "wrapper into every module tree a caller passes, whatever `isinstance(child, ...)` it filters on")
def test_a_wrapper_of_another_module_class_is_not_followed():
    source = LORA.format(wrapped="nn.Conv2d", install="setattr(module, name, wrapped)")
    assert found(source, "GS301") == []


def test_a_wrapper_never_installed_is_not_followed():
    source = LORA.format(wrapped="nn.Linear", install="print(name, wrapped)")
    assert found(source, "GS301") == []
