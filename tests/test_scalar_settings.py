"""Settings that a schedule replaces (GS301): an attribute that starts from a config field or a
number parameter and is rebound per step — in a loop from a value the pass computes, or with
arithmetic on config values — is a per-step Python number; so is the pick of a conditional
expression on one, and the number given to a tensor-only method of an untracked value.

Each case has a look-alike that must stay silent (held-out set 6: bert_mlm, cfg_sampler,
distill_train, segment_train, ssm_decode).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphsafe.analyzer.engine import check_paths
from graphsafe.config import Settings
from tests.helpers import diagnostics


def gs301(source: str) -> list[int]:
    return sorted(d.start.line for d in diagnostics(textwrap.dedent(source)) if d.code == "GS301")


def project_gs301(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, int]]:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return {(Path(d.path).name, d.start.line) for d in result.diagnostics if d.code == "GS301"}


# A trainer whose loss scale starts from the config and is replaced in the loop that replays
# the graph by what another object's method returns (its type is not visible in this file).
SCALED = """
import torch
from scaler import DynamicScale


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.scaler = DynamicScale(cfg.init_scale)
        self.loss_scale = cfg.init_scale
        self.graph = torch.cuda.CUDAGraph()

    def train_step(self, loss: torch.Tensor):
        return loss * self.loss_scale

    def capture(self, loss: torch.Tensor):
        with torch.cuda.graph(self.graph):
            self.train_step(loss)

    def fit(self, batches):
        for batch in batches:
            self.graph.replay()
            self.loss_scale = {rebind}
"""


def test_a_config_setting_rebound_in_the_loop_by_a_call_varies():
    assert gs301(SCALED.format(rebind="self.scaler.update(False)")) == [14]
    assert gs301(SCALED.format(rebind="scale_at(batch)")) == [14]


def test_a_config_setting_rebound_in_the_loop_with_a_fixed_value_stays_silent():
    # the same field each pass, or another config field: no value the pass computes
    assert gs301(SCALED.format(rebind="self.cfg.init_scale")) == []
    assert gs301(SCALED.format(rebind="self.cfg.max_scale")) == []


def test_a_config_setting_rebound_once_outside_a_loop_by_an_unknown_call_stays_silent():
    source = SCALED.format(rebind="self.cfg.init_scale").replace(
        "    def fit(self, batches):", "    def reset(self):\n        self.loss_scale = load_scale()\n\n    def fit(self, batches):")
    assert gs301(source) == []


def test_a_config_setting_rebound_per_pass_reaches_a_callee_in_another_file(tmp_path: Path):
    files = {
        "losses.py": """
            import torch


            def kd(student: torch.Tensor, teacher: torch.Tensor, temperature: float) -> torch.Tensor:
                return (student / temperature - teacher / temperature).pow(2).mean()
        """,
        "schedule.py": """
            def temperature_at(epoch: int, cfg) -> float:
                return cfg.t0 + (cfg.t1 - cfg.t0) * epoch / cfg.epochs
        """,
        "trainer.py": """
            import torch
            from losses import kd
            from schedule import temperature_at


            class Trainer:
                def __init__(self, cfg):
                    self.cfg = cfg
                    self.temperature = cfg.t0
                    self.graph = torch.cuda.CUDAGraph()

                def train_step(self, s: torch.Tensor, t: torch.Tensor):
                    return kd(s, t, self.temperature)

                def capture(self, s: torch.Tensor, t: torch.Tensor):
                    with torch.cuda.graph(self.graph):
                        self.train_step(s, t)

                def fit(self, epochs: int):
                    for epoch in range(epochs):
                        self.temperature = {rebind}
                        self.graph.replay()
        """,
    }
    trainer = files["trainer.py"]
    files["trainer.py"] = trainer.replace("{rebind}", "temperature_at(epoch, self.cfg)")
    assert project_gs301(tmp_path, files) == {("losses.py", 6)}
    files["trainer.py"] = trainer.replace("{rebind}", "self.cfg.t0")
    assert project_gs301(tmp_path, files) == set()


# arithmetic on config fields outside a loop (`set_epoch` called by the driver)
ANNEALED = """
import torch


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.temperature = cfg.t_start

    def set_epoch(self, epoch: int, epochs: int):
        frac = epoch / epochs
        self.temperature = {rebind}

    def step(self, logits: torch.Tensor):  # graphsafe: region
        return logits / self.temperature
"""


def test_a_config_setting_rebound_with_arithmetic_on_config_values_varies():
    assert gs301(ANNEALED.format(rebind="self.cfg.t_start + frac * (self.cfg.t_end - self.cfg.t_start)")) == [15]


def test_a_config_setting_rebound_from_another_field_outside_a_loop_stays_silent():
    assert gs301(ANNEALED.format(rebind="self.cfg.t_end")) == []


# a setting read from a parameter annotated as a config class, replaced per request
GENERATOR = """
import torch
from config import {annotation}


class Generator:
    def __init__(self, gen: {annotation}):
        self.temperature = gen.temperature
        self.graph = torch.cuda.CUDAGraph()

    def decode_step(self, logits: torch.Tensor):
        return logits / self.temperature

    def capture(self, logits: torch.Tensor):
        with torch.cuda.graph(self.graph):
            self.decode_step(logits)

    def generate(self, temperature: float):
        self.temperature = temperature
        self.graph.replay()
"""


def test_a_field_of_a_config_parameter_replaced_per_request_varies():
    assert gs301(GENERATOR.format(annotation="GenerationConfig")) == [12]


def test_a_field_of_a_parameter_that_is_no_config_stays_silent():
    assert gs301(GENERATOR.format(annotation="Sampler")) == []


# a number parameter of __init__ the class then updates itself
SCALE_PARAM = """
import torch


class Scaler:
    def __init__(self, init_scale: float):
        self.scale = init_scale

    def grow(self):
        {update}

    def apply(self, grads: torch.Tensor):  # graphsafe: region
        return grads * self.scale
"""


def test_a_number_parameter_setting_updated_by_a_method_varies():
    assert gs301(SCALE_PARAM.format(update="self.scale *= 2.0")) == [13]
    assert gs301(SCALE_PARAM.format(update="self.scale = max(self.scale / 2.0, 1.0)")) == [13]


def test_a_number_parameter_setting_never_updated_stays_silent():
    assert gs301(SCALE_PARAM.format(update="pass")) == []


# a conditional expression whose test is a per-step number and whose pick is a tensor
PICK = """
import torch


class Sampler:
    def __init__(self):
        self.old = torch.zeros(4)

    def step(self, x: torch.Tensor, i: int):  # graphsafe: region
        {line}
        return x
"""


def test_a_conditional_expression_on_a_per_step_number_picking_a_tensor():
    assert gs301(PICK.format(line="prev = None if i == 0 else self.old")) == [10]
    assert gs301(PICK.format(line="prev = x if i > 3 else self.old")) == [10]


def test_a_conditional_expression_picking_host_values_stays_silent():
    # numbers or strings: reported (if at all) where the picked number meets a tensor
    assert gs301(PICK.format(line="tag = 'first' if i == 0 else 'next'")) == []
    assert gs301(PICK.format(line="prev = None if x.dim() == 2 else self.old")) == []


# a tensor-only method on an element of a dict of tensors (an EMA's shadow weights)
SHADOW = """
import torch


class Meter:
    def add_(self, value: float):
        pass


class EMA:
    def __init__(self, model: torch.nn.Module):
        self.updates = 0
        self.meter = Meter()
        self.shadow = {{k: v.detach().clone() for k, v in model.state_dict().items()}}

    def update(self, model: torch.nn.Module):  # graphsafe: region
        self.updates += 1
        d = min(0.999, (1 + self.updates) / (10 + self.updates))
        for name, value in model.state_dict().items():
            {line}
"""


def test_a_tensor_only_method_of_a_dict_element_takes_a_per_step_number():
    assert gs301(SHADOW.format(line="self.shadow[name].lerp_(value, 1.0 - d)")) == [20]


def test_a_fixed_number_or_a_project_method_of_that_name_stays_silent():
    assert gs301(SHADOW.format(line="self.shadow[name].lerp_(value, 0.1)")) == []
    assert gs301(SHADOW.format(line="self.meter.add_(d)")) == []


# a helper imported from another module of the program, given a counter of the class
HELPER_CALLER = """
    import torch
    from {module} import lr_at


    class Trainer:
        def __init__(self, cfg):
            self.cfg = cfg
            self.step = 0

        def train_step(self, x: torch.Tensor):  # graphsafe: region
            lr = lr_at({arg}, self.cfg.lr)
            return x * lr

        def fit(self, xs):
            for x in xs:
                self.train_step(x)
                self.step += 1
"""
HELPER = """
    def lr_at(step: int, base: float) -> float:
        return base * min(1.0, (step + 1) / 100)
"""


def test_an_imported_helper_given_a_counter_returns_a_per_step_number(tmp_path: Path):
    files = {"schedules.py": HELPER, "train.py": HELPER_CALLER.format(module="schedules", arg="self.step")}
    assert project_gs301(tmp_path, files) == {("train.py", 13)}


def test_an_imported_helper_given_a_fixed_value_stays_silent(tmp_path: Path):
    files = {"schedules.py": HELPER, "train.py": HELPER_CALLER.format(module="schedules", arg="self.cfg.warmup")}
    assert project_gs301(tmp_path, files) == set()



# a number field of a dataclass in another file, set on each pass of the replay loop
STATE = """
    from dataclasses import dataclass


    @dataclass
    class SamplingState:
        temperature: float = 1.0
"""
SAMPLER_WITH_STATE = """
    import torch
    from state import SamplingState


    class Sampler:
        def __init__(self):
            self.state = SamplingState()
            self.graph = torch.cuda.CUDAGraph()

        def step(self, logits: torch.Tensor):
            return logits / self.state.temperature

        def capture(self, logits: torch.Tensor):
            with torch.cuda.graph(self.graph):
                self.step(logits)

        def run(self, temperatures: list[float]):
            for t in temperatures:
                self.state.temperature = {value}
                self.graph.replay()
"""


def test_a_dataclass_number_field_set_per_pass_varies(tmp_path: Path):
    files = {"state.py": STATE, "sampler.py": SAMPLER_WITH_STATE.format(value="t")}
    assert project_gs301(tmp_path, files) == {("sampler.py", 12)}


def test_a_dataclass_number_field_set_to_a_literal_stays_silent(tmp_path: Path):
    files = {"state.py": STATE, "sampler.py": SAMPLER_WITH_STATE.format(value="0.7")}
    assert project_gs301(tmp_path, files) == set()


# an entry of a dict attribute that starts as a setting and is replaced on each pass
HPARAMS = """
import torch


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.hp = {{"lr": cfg.lr, "w": torch.ones(3)}}
        self.graph = torch.cuda.CUDAGraph()

    def step(self, x: torch.Tensor):
        return x * self.hp["{key}"]

    def capture(self, x: torch.Tensor):
        with torch.cuda.graph(self.graph):
            self.step(x)

    def fit(self, n: int):
        for i in range(n):
            self.hp["{key}"] = {value}
            self.graph.replay()
"""


def test_a_dict_entry_replaced_per_pass_varies():
    assert gs301(HPARAMS.format(key="lr", value="self.cfg.lr / (i + 1)")) == [12]


def test_a_dict_entry_of_a_tensor_or_a_fixed_value_stays_silent():
    assert gs301(HPARAMS.format(key="w", value="torch.ones(3) * i")) == []
    assert gs301(HPARAMS.format(key="lr", value="self.cfg.lr")) == []


# a method walked earlier that returns host numbers, given a counter, its result unpacked
UNPACKED = """
import torch


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.it = 0

    def schedule(self, i: int):
        return {returns}

    def step(self, x: torch.Tensor):  # graphsafe: region
        lr, wd = self.schedule({arg})
        self.it += 1
        return x * lr
"""


def test_a_tuple_unpacked_from_a_number_method_given_a_counter_varies():
    assert gs301(UNPACKED.format(returns="self.cfg.lr / (i + 1), self.cfg.wd * i", arg="self.it")) == [16]


def test_a_tuple_unpacked_from_a_fixed_argument_or_of_tensors_stays_silent():
    assert gs301(UNPACKED.format(returns="self.cfg.lr / (i + 1), self.cfg.wd * i", arg="3")) == []
    # tensors made from the counter: reported where the kernel takes it (line 11), not at their use
    assert gs301(UNPACKED.format(returns="torch.ones(3) / (i + 1), torch.zeros(3)", arg="self.it")) == [11]


# a parameter declared as nothing, given a per-step number by its caller
UNDECLARED = """
import torch


class Sampler:
    def __init__(self, cfg):
        self.cfg = cfg
        self.guidance = cfg.guidance
        self.graph = torch.cuda.CUDAGraph()

    def denoise(self, x: torch.Tensor, guidance):
        return x * guidance

    def step(self, x: torch.Tensor):
        return self.denoise(x, {arg})

    def capture(self, x: torch.Tensor):
        with torch.cuda.graph(self.graph):
            self.step(x)

    def run(self, xs, n: int):
        for i in range(n):
            self.guidance = self.cfg.guidance * (1 - i / n)
            self.graph.replay()
"""


def test_an_undeclared_parameter_given_a_per_step_number_varies():
    assert gs301(UNDECLARED.format(arg="self.guidance")) == [12]


def test_an_undeclared_parameter_given_a_setting_stays_silent():
    assert gs301(UNDECLARED.format(arg="self.cfg.guidance")) == []


def test_an_undeclared_parameter_of_a_root_or_given_loop_items_stays_silent():
    # `scale: float` of a root is per step; `scale` declared as nothing is whatever callers pass
    root = "import torch\n\ndef step(x: torch.Tensor, scale):  # graphsafe: region\n    return x * scale\n"
    assert gs301(root) == []
    assert gs301(root.replace("scale):", "scale: float):")) == [4]
    # an eager loop handing over its items (batches, not numbers)
    loop = (root + "\n\ndef train(x: torch.Tensor, batches):\n    for batch in batches:\n        step(x, batch)\n")
    assert gs301(loop) == []
