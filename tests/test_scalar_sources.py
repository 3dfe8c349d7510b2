"""Where per-step Python numbers come from (GS301), in the shapes training and sampling code takes.

Each case has a look-alike that must stay silent: the same code with a step-invariant value.
"""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics, lines_of


def gs301_lines(source: str) -> list[int]:
    return lines_of(source, "GS301")  # every use, grouped or not


ANNEALED = """
import torch


class Learner:
    def update(self, x: torch.Tensor, clip: float):
        return x.clamp(1 - clip, 1 + clip)

    def capture(self, batch: dict):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.update(**batch, clip=0.2)

    def learn(self, batch: dict, clip: float):
        self.update(**batch, clip=clip)


def train(batch: dict, cfg, iterations: int):
    learner = Learner()
    learner.capture(batch)
    for it in range(iterations):
        clip = cfg.clip * (1.0 - it / max(1, iterations))
        learner.learn(batch, {clip})
"""


def test_a_value_computed_from_the_driving_loop_reaches_the_region_through_keywords():
    # `clip` is computed from the loop variable, passed through `learn`, and after a `**batch`
    # unpacking its keyword still names the slot
    assert gs301_lines(ANNEALED.format(clip="clip")) == [7, 7]
    assert gs301_lines(ANNEALED.format(clip="cfg.clip")) == []  # a config value: invariant


DECAYED = """
import torch


class PPO:
    def __init__(self, cfg):
        self.ent_coef = cfg.ent_coef

    def step(self, x: torch.Tensor):  # graphsafe: region
        return x.mean() - self.ent_coef * x.std()

    def end_iteration(self, cfg):
        {update}
"""


def test_a_config_initialised_attribute_updated_in_place_varies():
    assert gs301_lines(DECAYED.format(update="self.ent_coef *= cfg.decay")) == [10]
    assert gs301_lines(DECAYED.format(update="pass")) == []


EMA = """
import math
import torch


class EMA:
    def __init__(self, tau: float):
        self.updates = 0
        self.tau = tau

    def decay(self) -> float:
        return 0.999 * (1 - math.exp(-{counter} / self.tau))

    def update(self, params: list, new: list):  # graphsafe: region
        self.updates += 1
        d = self.decay()
        for p, q in zip(params, new):
            p.mul_(d).add_(q, alpha=1 - d)
"""


def test_math_of_a_counter_returned_by_a_helper_method():
    # `p` is unknown (from a list), but `mul_` and `add_` are methods only tensors have: each
    # kernel bakes the number in, `p.mul_(d)` and `alpha=1 - d`
    assert gs301_lines(EMA.format(counter="self.updates")) == [18, 18]
    assert gs301_lines(EMA.format(counter="self.tau")) == []


def test_a_comparison_with_a_tensor_bakes_the_number_in():
    source = """
        import torch

        def step(x: torch.Tensor, threshold: float, n: int):  # graphsafe: region
            keep = (x.abs() > threshold).float()
            if x.dim() > 1 and threshold > 0:
                pass
            return keep
    """
    assert gs301_lines(source) == [5]


def test_reseeding_is_gs602_not_gs301():
    source = """
        import torch

        class Sampler:
            def __init__(self):
                self.i = 0

            def step(self, x: torch.Tensor):  # graphsafe: region
                torch.manual_seed(1234 + self.i)
                self.i += 1
                return x * 2
    """
    found = {d.code for d in diagnostics(textwrap.dedent(source)) if d.start.line == 9}
    assert found == {"GS602"}


TRAINER = """
import torch


def cosine(step: int, base: float) -> float:
    return base * (1 + step) / 100


class Trainer:
    def __init__(self, cfg, opt):
        self.cfg = cfg
        self.opt = opt
        self.beta = cfg.beta
        self.updates = 0

    @property
    def decay(self) -> float:
        return {decay}

    def train_step(self, x: torch.Tensor):
        y = x * self.beta
        d = self.decay
        z = x.lerp(y, 1.0 - d)
        self.updates += 1
        return z

    def fit(self, batches, total: int):
        for step, x in enumerate(batches):
            self.beta = {beta}
            self.train_step(x)

    def capture(self, x: torch.Tensor):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.train_step(x)
"""


def test_a_config_attribute_reassigned_with_a_new_number_each_step():
    source = TRAINER.format(beta="self.cfg.beta * min(1.0, (step + 1) / total)", decay="self.cfg.decay")
    assert gs301_lines(source) == [21]
    source = TRAINER.format(beta="cosine(step, self.cfg.beta)", decay="self.cfg.decay")
    assert gs301_lines(source) == [21]


def test_a_config_attribute_reassigned_from_another_attribute_stays_silent():
    assert gs301_lines(TRAINER.format(beta="self.cfg.other_beta", decay="self.cfg.decay")) == []


def test_a_property_derived_from_a_counter_is_per_step():
    source = TRAINER.format(beta="self.cfg.other_beta", decay="min(0.99, (1 + self.updates) / (10 + self.updates))")
    assert gs301_lines(source) == [23]


def test_a_number_function_of_a_counter_is_per_step():
    source = textwrap.dedent("""
        import torch


        def get_lr(it: int, base: float) -> float:
            return base * (it + 1)


        class M:
            def __init__(self, opt):
                self.opt = opt
                self.iter_num = 0

            def step(self, x: torch.Tensor):  # graphsafe: region
                lr = get_lr({arg}, 0.1)
                for group in self.opt.param_groups:
                    group["lr"] = lr
                self.iter_num += 1
        """)
    assert gs301_lines(source.replace("{arg}", "self.iter_num")) == [17]
    assert gs301_lines(source.replace("{arg}", "3")) == []


def test_a_number_attribute_set_in_a_loop_by_code_outside_the_class():
    source = textwrap.dedent("""
        import torch


        class Session:
            def __init__(self):
                self.temperature = 1.0

            def step(self, logits: torch.Tensor):
                return logits / self.temperature

            def capture(self, logits: torch.Tensor):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    self.step(logits)


        def translate(session: Session, temperatures: list, logits: torch.Tensor):
            {body}
        """)
    assert gs301_lines(source.replace("{body}", "for t in temperatures:\n        session.temperature = t")) == [10]
    # set once, before anything runs: not per step
    assert gs301_lines(source.replace("{body}", "session.temperature = temperatures[0]")) == []


def test_a_counter_branch_that_hands_tensors_or_modules_to_a_program_function():
    source = textwrap.dedent("""
        import torch


        def polyak(online: torch.nn.Module, target: torch.nn.Module) -> None:
            pass


        def save_grid(images: torch.Tensor, path: str) -> None:
            pass


        class Agent:
            def __init__(self):
                self.q = torch.nn.Linear(2, 2)
                self.q_target = torch.nn.Linear(2, 2)

            def update(self, x: torch.Tensor, step: int):  # graphsafe: region
                if step % 2 == 0:
                    {body}
        """)
    assert gs301_lines(source.replace("{body}", "polyak(self.q, self.q_target)")) == [19]
    assert gs301_lines(source.replace("{body}", "save_grid(x[:4], 'a.pgm')")) == [19]
    # only host values handed over, or a builtin given a tensor: no tensor work chosen
    assert gs301_lines(source.replace("{body}", "save_grid(None, f'{step}.pgm')")) == []
    assert gs301_lines(source.replace("{body}", "print(len(x))")) == []


# Set 4 (gnn_train, moco_train): the schedule is a method annotated `-> float`, its value
# stored in an attribute that the capture block passes to the step, which uses it in tensor math.
METHOD_SCHEDULE = """
import torch


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.lr = cfg.lr
        self.static_x = torch.zeros(4)
        self.g = torch.cuda.CUDAGraph()

    def lr_at(self, it: int){returns}:
        return self.cfg.lr / (it + 1)

    def train_step(self, x: torch.Tensor, lr: float):
        return x * lr

    def capture(self):
        with torch.cuda.graph(self.g):
            self.out = self.train_step(self.static_x, self.lr)

    def fit(self, batches):
        for it, x in enumerate(batches):
            self.lr = self.lr_at(it)
            self.static_x.copy_(x)
            self.g.replay()
"""


def test_an_attribute_set_from_a_number_method_each_step_varies_and_is_no_graph_input():
    found = [(d.start.line, d.code) for d in diagnostics(METHOD_SCHEDULE.format(returns=" -> float"))]
    assert found == [(16, "GS301")]


def test_an_attribute_set_each_pass_from_an_unannotated_method_varies_and_is_no_graph_input():
    # what the method returns is not annotated, but `self.lr` started as a config number and the
    # loop that replays rebinds it each pass from the loop variable: a schedule (GS301), no tensor
    found = [(d.start.line, d.code) for d in diagnostics(METHOD_SCHEDULE.format(returns=""))]
    assert found == [(16, "GS301")]


def test_a_number_method_and_function_give_python_numbers():
    source = textwrap.dedent("""
        import torch


        def warm(it: int) -> float:
            return min(1.0, it / 100)


        class C:
            def scale(self) -> float:
                return 0.5

            def run(self, x: torch.Tensor):  # graphsafe: region
                a = self.scale()
                b = warm(3)
                if a > 0.1 and b > 0.1:
                    x.mul_(2)
                return x
    """)
    assert [d.code for d in diagnostics(source)] == []
    # the look-alike: the same names returning tensors
    tensor = source.replace("-> float", "-> torch.Tensor").replace("0.5", "torch.ones(())").replace(
        "min(1.0, it / 100)", "torch.ones(()) * it")
    assert "GS201" in [d.code for d in diagnostics(tensor)]


WARMUP_PROPERTY = """
import torch
from config import Config  # defined in another file


class Trainer:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.batches = 0

    @property
    def neg_weight(self) -> float:
        return self.cfg.neg_weight * min(1.0, ({counter} + 1) / self.cfg.warmup)

    def step(self, pos: torch.Tensor, neg: torch.Tensor):  # graphsafe: region
        loss = pos + self.neg_weight * neg
        self.batches += 1
        return loss
"""


def test_a_config_factor_does_not_hide_the_counter_beside_it():
    # `self.cfg.neg_weight` (a number of a config class) varies only if the project says so;
    # the counter next to it varies for certain
    assert gs301_lines(WARMUP_PROPERTY.format(counter="self.batches")) == [16]


def test_a_config_factor_with_step_invariant_numbers_stays_silent():
    assert gs301_lines(WARMUP_PROPERTY.format(counter="self.cfg.warmup")) == []


COSINE_SCHEDULE = """
import math


class Cosine:
    def __init__(self, base: float, total: int):
        self.base = base
        self.total = total
        self.it = 0

    @property
    def lr(self) -> float:
        return self.base * 0.5 * (1 + math.cos(math.pi * {position} / self.total))

    def advance(self):
        self.it += 1
"""

SCHEDULED_TRAINER = """
import torch
{imports}

class Trainer:
    def __init__(self):
        self.sched = Cosine(0.1, 100)
        self.w = torch.zeros(4)

    def step(self, g: torch.Tensor):  # graphsafe: region
        self.w.sub_(g * self.sched.lr)

    def fit(self, gs):
        for g in gs:
            self.step(g)
            self.sched.advance()
"""


def _property_reports(tmp_path, position: str, same_file: bool) -> set[tuple[str, int, str]]:
    from pathlib import Path

    from graphsafe.analyzer.engine import check_paths
    from graphsafe.config import Settings

    schedule = textwrap.dedent(COSINE_SCHEDULE.format(position=position))
    if same_file:
        (tmp_path / "train.py").write_text(schedule + SCHEDULED_TRAINER.format(imports=""))
    else:
        (tmp_path / "sched.py").write_text(schedule)
        (tmp_path / "train.py").write_text(SCHEDULED_TRAINER.format(imports="from sched import Cosine\n"))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics}


def test_a_property_of_another_object_over_its_counter_is_per_step(tmp_path):
    assert _property_reports(tmp_path, "self.it", same_file=False) == {("train.py", 12, "GS301")}


def test_the_same_property_defined_in_the_same_file(tmp_path):
    assert _property_reports(tmp_path, "self.it", same_file=True) == {("train.py", 27, "GS301")}


def test_a_property_of_another_object_over_constants_stays_silent(tmp_path):
    assert _property_reports(tmp_path, "self.total", same_file=False) == set()
    assert _property_reports(tmp_path, "self.total", same_file=True) == set()


# A setting of a program dataclass beside a per-step parameter, and a helper that returns tensor
# arithmetic holding a per-step number (eleventh held-out set, depth_estimation).
SETTINGS_MODULE = """
from dataclasses import dataclass


@dataclass
class Cfg:
    lr: float = 1e-3
    w: float = 0.1
"""

SCALED_TRAINER = """
import torch
from settings import Cfg


def weight_at(step: int, w: float) -> float:
    return w * min(1.0, step / 100)


class Trainer:
    def __init__(self, cfg: Cfg, opt):
        self.cfg = cfg
        self.opt = opt
        self.lr_scale = 1.0
        self.step_count = 0

    def _loss(self, x: torch.Tensor):
        return x.mean() + weight_at({counter}, self.cfg.w) * x.std()

    def train_step(self, x: torch.Tensor, lr_scale: float) -> torch.Tensor:
        total = torch.zeros(())
        total = total + self._loss(x)
        for group in self.opt.param_groups:
            group["lr"] = self.cfg.lr * lr_scale
        self.step_count += 1
        return total

    def capture(self, x: torch.Tensor):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.out = self.train_step(x, self.lr_scale)

    def fit(self, xs, plateau):
        for x in xs:
            self.train_step(x, self.lr_scale)
            self.lr_scale = {rebind}
"""


def _scaled_reports(tmp_path, counter: str, rebind: str) -> set[tuple[int, str]]:
    from graphsafe.analyzer.engine import check_paths
    from graphsafe.config import Settings

    (tmp_path / "settings.py").write_text(textwrap.dedent(SETTINGS_MODULE))
    (tmp_path / "train.py").write_text(textwrap.dedent(SCALED_TRAINER.format(counter=counter, rebind=rebind)))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return {(d.start.line, d.code) for d in result.diagnostics if d.code == "GS301"}


def test_a_per_step_parameter_beside_a_setting_in_a_param_group_write(tmp_path):
    # `self.cfg.lr * lr_scale`: the setting may be fixed, the parameter the loop rebinds is not
    assert (24, "GS301") in _scaled_reports(tmp_path, "self.step_count", "plateau.update(x)")


def test_the_same_write_with_a_fixed_scale_stays_silent(tmp_path):
    assert (24, "GS301") not in _scaled_reports(tmp_path, "self.step_count", "1.0")


def test_a_helper_returning_tensor_arithmetic_is_reported_inside_not_at_its_call(tmp_path):
    reports = _scaled_reports(tmp_path, "self.step_count", "1.0")
    assert (18, "GS301") in reports  # where the counter meets the tensor
    assert (22, "GS301") not in reports  # `total + self._loss(x)`: a tensor, not a number


def test_the_same_helper_over_a_constant_stays_silent(tmp_path):
    assert _scaled_reports(tmp_path, "0", "1.0") == set()


def _scaled_local_reports(tmp_path, rebind: str) -> set[tuple[int, str]]:
    # the same write through a local: `new_lr = self.cfg.lr * lr_scale; group["lr"] = new_lr`
    from graphsafe.analyzer.engine import check_paths
    from graphsafe.config import Settings

    trainer = SCALED_TRAINER.replace('group["lr"] = self.cfg.lr * lr_scale',
                                     'new_lr = self.cfg.lr * lr_scale\n            group["lr"] = new_lr')
    (tmp_path / "settings.py").write_text(textwrap.dedent(SETTINGS_MODULE))
    (tmp_path / "train.py").write_text(textwrap.dedent(trainer.format(counter="0", rebind=rebind)))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return {(d.start.line, d.code) for d in result.diagnostics if d.code == "GS301"}


def test_a_per_step_parameter_beside_a_setting_through_a_local(tmp_path):
    assert _scaled_local_reports(tmp_path, "plateau.update(x)") == {(25, "GS301")}


def test_the_same_local_with_a_fixed_scale_stays_silent(tmp_path):
    assert _scaled_local_reports(tmp_path, "1.0") == set()
