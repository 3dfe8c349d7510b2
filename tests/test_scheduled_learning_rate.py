"""A torch optimizer's step reads `group["lr"]` as a Python number (GS301): where the program
changes the rate between steps (a learning-rate scheduler built anywhere in it, a warm-up
writing `group["lr"]`), the captured step keeps the rate it saw at capture.

Each case has a look-alike that must stay silent: a constant rate, a tensor rate, a project
optimizer (whose own `group["lr"]` reads are judged where they are), a noise scheduler's step.
"""

from __future__ import annotations

from tests.helpers import lines_of, project_findings


def gs301(source: str) -> list[int]:
    return lines_of(source, "GS301")


def project_gs301(tmp_path, files: dict[str, str]) -> set[tuple[str, int]]:
    return {(name, line) for name, line, _ in project_findings(tmp_path, files, "GS301")}


STEP = """
import torch

model = torch.nn.Linear(4, 4)
opt = torch.optim.AdamW(model.parameters(), lr={lr}, capturable=True)
{schedule}

def train_step(x):  # graphsafe: region
    model(x).sum().backward()
    opt.step()
"""


def test_step_of_an_optimizer_whose_rate_a_scheduler_changes_is_reported():
    assert gs301(STEP.format(lr="1e-3", schedule="sched = torch.optim.lr_scheduler.StepLR(opt, 10)")) == [10]


def test_step_of_an_optimizer_with_a_constant_rate_is_silent():
    assert gs301(STEP.format(lr="1e-3", schedule="")) == []


def test_step_of_an_optimizer_with_a_tensor_rate_is_silent():
    source = STEP.format(lr="torch.tensor(1e-3)", schedule="sched = torch.optim.lr_scheduler.StepLR(opt, 10)")
    assert gs301(source) == []


def test_a_scheduler_class_of_the_program_counts_as_a_schedule():
    schedule = ("class Warmup(torch.optim.lr_scheduler.LambdaLR):\n"
                "    def __init__(self, opt):\n        super().__init__(opt, lambda s: min(1.0, s / 100))")
    assert gs301(STEP.format(lr="1e-3", schedule=schedule)) == [12]


def test_scaler_step_of_a_named_optimizer_with_a_warm_up_in_another_file_is_reported(tmp_path):
    found = project_gs301(tmp_path, {
        "trainer.py": """
            class Trainer:
                def __init__(self, optimizer, scaler):
                    self.optimizer = optimizer
                    self.scaler = scaler

                def train_step(self, loss):  # graphsafe: region
                    self.scaler.scale(loss).backward()
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
            """,
        "warmup.py": """
            import numpy as np

            def warm_up(optimizer, batches, warmup_batches, base_lr):
                for ni in range(batches):
                    for group in optimizer.param_groups:
                        group["lr"] = float(np.interp(ni, [0, warmup_batches], [0.0, base_lr]))
            """,
    })
    assert ("trainer.py", 9) in found


def test_named_optimizer_without_any_schedule_in_the_program_is_silent(tmp_path):
    found = project_gs301(tmp_path, {
        "trainer.py": """
            class Trainer:
                def __init__(self, optimizer):
                    self._optimizer = optimizer

                def train_step(self, loss):  # graphsafe: region
                    loss.backward()
                    self._optimizer.step()
            """,
        "setup.py": """
            def configure(optimizer, weight_decay):
                for group in optimizer.param_groups:
                    group["weight_decay"] = weight_decay
            """,
    })
    assert found == set()


def test_project_optimizer_and_noise_scheduler_steps_are_not_torch_steps():
    source = """
    import torch

    class Lion(torch.optim.Optimizer):
        def step(self):
            pass

    model = torch.nn.Linear(4, 4)
    opt = Lion(model.parameters(), dict(lr=1e-3))
    sched = torch.optim.lr_scheduler.StepLR(opt, 10)

    def train_step(x, noise_scheduler, t):  # graphsafe: region
        model(x).sum().backward()
        opt.step()
        return noise_scheduler.step(x, t, x)
    """
    assert 14 not in gs301(source) and 15 not in gs301(source)


def test_a_warm_up_inside_the_region_is_reported_at_its_write_alone():
    source = """
    import torch

    class Trainer:
        def __init__(self, model, cfg):
            self.opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
            self.step_count = 0

        def train_step(self, loss, lr: float):  # graphsafe: region
            loss.backward()
            for group in self.opt.param_groups:
                group["lr"] = lr
            self.opt.step()
    """
    assert gs301(source) == [12]


def test_an_optimizer_this_file_schedules_no_schedule_for_is_silent():
    source = """
    import torch

    class Trainer:
        def __init__(self, model, head):
            self.opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=True)
            self.head_opt = torch.optim.SGD(head.parameters(), lr=1e-2)
            self.plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(self.opt)

        def train_step(self, loss):  # graphsafe: region
            loss.backward()
            self.opt.step()
            self.head_opt.step()
    """
    assert gs301(source) == [12]
