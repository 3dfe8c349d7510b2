"""Per-step settings (GS301): an attribute that is set again between steps follows the steps,
each case beside a look-alike that must stay silent:

- an attribute set from outside the class inside a `while` loop (`while not done:
  ev.temperature = temp(moves)`) is per step, like one set in a `for` loop; set once, or set to a
  literal, it is not;
- a setting started from a config field and recomputed outside `__init__`, not in a loop, by a
  helper given a per-step number (`self.explore = self.sched.value(self.served)`, `self.forget =
  decay_at(self.served, base)`, `self.noise = noise_at(step, ...)` with `step: int`), also
  through a local name, a tuple unpacked from one call, one arm of a conditional expression or
  a dict entry: reported where the region reads it, and where a callee (in another file) is
  given it as a number parameter; recomputed from settings only (or a `str` parameter) it is not.
"""

from __future__ import annotations

from tests.helpers import lines_of, project_findings


found = lines_of  # the lines where a code is reported
project = project_findings  # (file name, line, code) of each diagnostic of a small program


# ----------------------------------------- attributes set from outside in a loop

EVALUATOR = """
import torch


class Evaluator:
    def __init__(self):
        self.temperature = 1.0

    def evaluate(self, logits: torch.Tensor) -> torch.Tensor:  # graphsafe: region
        return torch.softmax(logits / self.temperature, -1)


def temperature_at(moves: int) -> float:
    return 1.0 if moves < 4 else 0.5


def play(ev: Evaluator, logits: torch.Tensor, moves: int):
    {body}
"""


def test_an_attribute_set_from_outside_in_a_while_loop_is_per_step():
    body = "while moves < 9:\n        ev.temperature = temperature_at(moves)\n        moves += 1\n        ev.evaluate(logits)"
    assert found(EVALUATOR.format(body=body), "GS301") == [10]


def test_an_attribute_set_once_from_outside_is_silent():
    body = "ev.temperature = temperature_at(moves)\n    while moves < 9:\n        moves += 1\n        ev.evaluate(logits)"
    assert found(EVALUATOR.format(body=body), "GS301") == []


def test_a_literal_set_in_a_while_loop_is_silent():
    body = "while moves < 9:\n        ev.temperature = 1.0\n        moves += 1\n        ev.evaluate(logits)"
    assert found(EVALUATOR.format(body=body), "GS301") == []


# ------------------------------------------- settings recomputed between replays

SCHEDULES = """\
def decay_at(t: int, base: float) -> float:
    return base ** (1.0 / (1 + t))


class Linear:
    def __init__(self, start: float, end: float, horizon: int):
        self.start, self.end, self.horizon = start, end, horizon

    def value(self, t: int) -> float:
        return self.start + min(1.0, t / self.horizon) * (self.end - self.start)
"""


POSTERIOR = """\
import torch


class Posterior(torch.nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.register_buffer("precision", torch.ones(n))

    def update(self, x: torch.Tensor, forget: float):
        self.precision.mul_(forget).add_(x)
"""


SERVICE = """\
import torch
from posterior import Posterior
from schedules import Linear, decay_at


class Service:
    def __init__(self, cfg):
        self.cfg = cfg
        self.posterior = Posterior(4)
        self.sched = Linear(cfg.explore_start, cfg.explore_end, 100)
        self.explore = cfg.explore_start
        self.forget = cfg.forget_start
        self.served = 0
        self.graph = None

    def step(self, x: torch.Tensor) -> torch.Tensor:
        self.posterior.update(x, self.forget)
        return x * self.explore

    def capture(self, x: torch.Tensor):
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.step(x)

    def handle(self, x: torch.Tensor):
        self.explore = {explore}
        self.forget = {forget}
        self.served += x.shape[0]
        self.graph.replay()
"""


def test_settings_recomputed_from_a_counter_between_replays_are_reported(tmp_path):
    got = project(tmp_path, {"schedules.py": SCHEDULES, "posterior.py": POSTERIOR, "service.py": SERVICE.format(
        explore="self.sched.value(self.served)", forget="decay_at(self.served + 1, self.cfg.forget_start)")})
    assert ("service.py", 18, "GS301") in got  # `x * self.explore`: a schedule object's method
    assert ("posterior.py", 10, "GS301") in got  # `mul_(forget)`: given the imported helper's value


def test_settings_recomputed_from_settings_only_stay_silent(tmp_path):
    got = project(tmp_path, {"schedules.py": SCHEDULES, "posterior.py": POSTERIOR, "service.py": SERVICE.format(
        explore="self.sched.value(self.cfg.warmup)", forget="decay_at(0, self.cfg.forget_start)")})
    assert not {d for d in got if d[2] == "GS301"}


AGENT = """\
import torch
from schedules import decay_at


class Agent:
    def __init__(self, cfg):
        self.cfg = cfg
        self.noise = cfg.noise_start

    def plan(self, obs: torch.Tensor, noise: float) -> torch.Tensor:
        return obs + torch.randn_like(obs) * noise

    def plan_step(self, obs: torch.Tensor, noise: float) -> torch.Tensor:
        return self.plan(obs, noise)

    def capture(self, obs: torch.Tensor):
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.action = self.plan_step(obs, self.noise)

    def act(self, obs: torch.Tensor, {param}):
        self.noise = decay_at({arg}, self.cfg.noise_start)
        self.graph.replay()
"""


def test_setting_recomputed_from_a_number_parameter_reaches_a_callee_of_a_callee(tmp_path):
    got = project(tmp_path, {"schedules.py": SCHEDULES, "agent.py": AGENT.format(param="step: int", arg="step")})
    assert ("agent.py", 11, "GS301") in got


def test_setting_recomputed_from_a_name_parameter_stays_silent(tmp_path):
    # `mode: str` is no per-step number: the helper's value is as fixed as its argument
    got = project(tmp_path, {"schedules.py": SCHEDULES, "agent.py": AGENT.format(param="mode: str", arg="mode")})
    assert not {d for d in got if d[2] == "GS301"}


def test_single_file_setting_recomputed_by_a_schedule_method():
    source = """\
        import torch
        from schedules import Cosine


        class C:
            def __init__(self, cfg):
                self.sched = Cosine(cfg)
                self.temp = cfg.temp
                self.updates = 0

            def step(self, logits: torch.Tensor):  # graphsafe: region
                return logits / self.temp

            def before_replay(self):
                self.temp = self.sched.value({arg})
                self.updates += 1
        """
    assert lines_of(source.format(arg="self.updates"), "GS301") == [12]
    assert lines_of(source.format(arg="self.sched.horizon"), "GS301") == []


NEIGHBOUR = """\
    import torch
    from schedules import Cosine


    class C:
        def __init__(self, cfg):
            self.cfg = cfg
            self.sched = Cosine(cfg)
            self.temp = cfg.temp
            self.beta = cfg.beta
            self.updates = 0

        def step(self, logits: torch.Tensor):  # graphsafe: region
            return logits / self.temp

        def before_replay(self):
            {body}
            self.updates += 1
    """


def neighbour(body: str) -> list[int]:
    return lines_of(NEIGHBOUR.format(body=body.replace("\n", "\n            ")), "GS301")


def test_counter_through_a_local_name():
    assert neighbour("step = self.updates\nself.temp = self.sched.value(step)") == [14]
    assert neighbour("step = self.cfg.warmup\nself.temp = self.sched.value(step)") == []


def test_helper_value_through_a_local_name():
    assert neighbour("t = self.sched.value(self.updates)\nself.temp = t") == [14]
    assert neighbour("t = self.sched.value(self.cfg.warmup)\nself.temp = t") == []


def test_settings_unpacked_from_one_helper_call():
    assert neighbour("self.temp, self.beta = self.sched.pair(self.updates)") == [14]
    assert neighbour("self.temp, self.beta = self.sched.pair(self.cfg.warmup)") == []


def test_helper_value_in_one_arm_of_a_pick():
    assert neighbour("self.temp = self.sched.value(self.updates) if self.cfg.anneal else self.cfg.temp") == [14]
    assert neighbour("self.temp = self.sched.value(self.cfg.x) if self.cfg.anneal else self.cfg.temp") == []


def test_dict_entry_recomputed_between_replays():
    source = """\
        import torch
        from schedules import Cosine


        class C:
            def __init__(self, cfg):
                self.cfg = cfg
                self.sched = Cosine(cfg)
                self.hp = {{"temp": cfg.temp}}
                self.updates = 0

            def step(self, logits: torch.Tensor):  # graphsafe: region
                return logits / self.hp["temp"]

            def before_replay(self):
                self.hp["temp"] = self.sched.value({arg})
                self.updates += 1
        """
    assert lines_of(source.format(arg="self.updates"), "GS301") == [13]
    assert lines_of(source.format(arg="self.cfg.warmup"), "GS301") == []
