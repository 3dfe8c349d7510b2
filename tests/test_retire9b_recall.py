"""Shapes found from the retired ninth held-out set (alphazero_selfplay, ts_forecast, grpo_train):

- an attribute set from outside the class inside a `while` loop (`while not done:
  ev.temperature = temp(moves)`) is per step, like one set in a `for` loop (GS301);
- `x[~m]` with a tensor `m` of unknown dtype reads with a boolean mask (GS108);
- a parameter passed to a torch loss (`F.mse_loss(values, zs)`) is a tensor in all of the
  function, so `if (zs.abs() > 1).any():` above it branches on a tensor (GS201);
- `self.a, self.b = (t.to(dev).clone() for t in batch)` binds tensor attributes (and a
  `self.a = None` beside a tensor no longer hides that it is one);
- `metrics["mase"]` of a dict of tensors (a literal, or `-> dict[str, Tensor]`), here or
  returned from another file, is a tensor (GS105 on `float(...)`); its keys are not.

Each case has a look-alike that must stay silent.
"""

from __future__ import annotations


from tests.helpers import lines_of, project_diagnostics


found = lines_of  # the lines where a code is reported


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


STEP = """
import torch
import torch.nn.functional as F


class Trainer:
    def train_step(self, values, pis, zs, legal: torch.Tensor):  # graphsafe: region
        pis = torch.where(legal > 2, pis, pis * 2)
        {check}
        picked = pis[~legal]
        return {loss} + picked.sum()
"""


def test_a_parameter_a_torch_loss_reads_is_a_tensor_above_that_call():
    source = STEP.format(check="if (zs.abs() > 1).any():\n            raise ValueError(zs)",
                         loss="F.mse_loss(values, zs)")
    assert found(source, "GS201") == [9]


def test_a_parameter_only_a_project_loss_reads_stays_unknown():
    # `my_loss` may take numbers or numpy arrays: nothing says `zs` is a tensor
    source = STEP.format(check="if (zs.abs() > 1).any():\n            raise ValueError(zs)",
                         loss="my_loss(values, zs)")
    assert found(source, "GS201") == []


def test_a_parameter_tested_with_isinstance_stays_unknown():
    source = STEP.format(check="if isinstance(zs, float) or (zs.abs() > 1).any():\n            raise ValueError(zs)",
                         loss="F.mse_loss(values, zs)")
    assert found(source, "GS201") == []


def test_an_inverted_tensor_index_is_a_boolean_mask():
    source = STEP.format(check="pass", loss="F.mse_loss(values, zs)")
    assert found(source, "GS108") == [10]


def test_an_inverted_int_index_and_a_masked_fill_are_silent():
    source = STEP.format(check="pis[~legal] = 0.0", loss="F.mse_loss(values, zs)").replace(
        "picked = pis[~legal]", "picked = pis[~3]")
    assert found(source, "GS108") == []


STATIC = """
import torch


class Runner:
    def __init__(self, model):
        self.model = model
        self.static_x = self.static_y = None

    def capture(self, batch, device):
        self.static_x, self.static_y = ({element} for t in batch)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.step(self.static_x, self.static_y)

    def step(self, x, y):
        if (y > 0).any():
            raise ValueError("negative")
        return self.model(x)
"""


def test_attributes_unpacked_from_a_generator_of_tensor_copies_are_tensors():
    assert found(STATIC.format(element="t.to(device).clone()"), "GS201") == [17]


def test_attributes_unpacked_from_a_generator_of_moved_values_stay_unknown():
    # `.to(device)` is also a module's method: the elements may be modules
    assert found(STATIC.format(element="t.to(device)"), "GS201") == []


def project(tmp_path, files: dict[str, str], code: str) -> set[tuple[str, int]]:
    return {(d.path.rsplit("/", 1)[-1], d.start.line) for d in project_diagnostics(tmp_path, files) if d.code == code}


METRICS = """
import torch


def metrics_of(pred: torch.Tensor){annotation}:
    {body}
"""

TRAINER = """
import torch
from metrics import metrics_of


class Trainer:
    def step(self, pred: torch.Tensor):  # graphsafe: region
        metrics = metrics_of(pred)
        for key in metrics:
            if key == "mase":
                pred = pred * 2
        return float(metrics["mase"])
"""


def test_an_element_of_a_dict_of_tensors_from_another_file_is_a_tensor(tmp_path):
    body = 'return {"mase": pred.mean(), "smape": pred.abs().mean()}'
    files = {"metrics.py": METRICS.format(annotation="", body=body), "trainer.py": TRAINER}
    assert project(tmp_path, files, "GS105") == {("trainer.py", 12)}
    assert project(tmp_path, files, "GS201") == set()  # its keys are strings


def test_a_function_annotated_to_return_a_dict_of_tensors(tmp_path):
    body = 'out = {}\n    out["mase"] = pred.mean()\n    return out'
    files = {"metrics.py": METRICS.format(annotation=" -> dict[str, torch.Tensor]", body=body), "trainer.py": TRAINER}
    assert project(tmp_path, files, "GS105") == {("trainer.py", 12)}


def test_a_dict_of_host_numbers_from_another_file_is_silent(tmp_path):
    body = 'return {"mase": 1.0, "smape": pred.shape[0]}'
    files = {"metrics.py": METRICS.format(annotation="", body=body), "trainer.py": TRAINER}
    assert project(tmp_path, files, "GS105") == set()


def test_a_local_dict_of_tensors_and_a_dict_of_numbers():
    source = """
    import torch


    def step(x: torch.Tensor, n: int):  # graphsafe: region
        stats = {"mean": x.mean(), "max": x.max()}
        sizes = {"n": n, "rows": x.shape[0]}
        return float(stats["mean"]) + float(sizes["n"])
    """
    assert found(source, "GS105") == [8]  # once: `float(sizes["n"])` is a number


DICT_LOOP = """
import torch


def step(x: torch.Tensor):  # graphsafe: region
    stats = {made}
    total = 0.0
    for {loop}:
        total += float({value})
    return total
"""


def test_the_values_of_a_dict_of_tensors_met_in_a_loop_are_tensors():
    made = 'dict(mean=x.mean(), top=x.max())'
    assert found(DICT_LOOP.format(made=made, loop="name, v in stats.items()", value="v"), "GS105") == [9]
    assert found(DICT_LOOP.format(made=made, loop="v in stats.values()", value="v"), "GS105") == [9]


def test_the_keys_and_a_dict_of_numbers_met_in_a_loop_are_silent():
    made = 'dict(mean=x.mean(), top=x.max())'
    assert found(DICT_LOOP.format(made=made, loop="name in stats", value="len(name)"), "GS105") == []
    numbers = 'dict(rows=x.shape[0], cols=x.shape[1])'
    assert found(DICT_LOOP.format(made=numbers, loop="name, v in stats.items()", value="v"), "GS105") == []
