"""GS5xx on whole programs: host work reached from a capture region, and look-alikes left alone."""

from __future__ import annotations

import textwrap

from tests.helpers import codes, diagnostics


def found(source: str, prefix: str = "GS5") -> list[tuple[str, int, tuple[str, ...]]]:
    """(code, line, chain) of each diagnostic of the family, in order."""
    return [(d.code, d.start.line, d.chain) for d in diagnostics(textwrap.dedent(source)) if d.code.startswith(prefix)]


TRAINING_LOOP = """\
import logging
import random

import torch
from torch import nn
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

logger = logging.getLogger(__name__)
writer = SummaryWriter("runs")
HISTORY = []


def load_batch(n):
    k = random.randint(0, n)
    print("loading", k)
    return torch.randn(8, 4)


def log_metrics(loss, step):
    logger.info("step %d", step)
    writer.add_scalar("loss", loss, step)
    HISTORY.append(loss)


def train_step(model, opt, x, y, step):
    out = model(x)
    loss = (out - y).pow(2).mean()
    loss.backward()
    opt.step()
    print(loss)
    print(f"step {step} loss {loss:.3f}")
    log_metrics(loss, step)
    return loss


def main():
    model = nn.Linear(4, 4).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    static_x = torch.zeros(8, 4, device="cuda")
    static_y = torch.zeros(8, 4, device="cuda")
    pbar = tqdm(range(100))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_loss = train_step(model, opt, static_x, static_y, 0)
        pbar.update(1)
    for step in pbar:
        static_x.copy_(load_batch(8))
        g.replay()
        logger.info("replayed %d", step)
        pbar.set_postfix(loss=static_loss.item())
"""

BLOCK = "torch.cuda.graph block in main (line 44)"


def test_training_loop_logging_is_reported_through_the_call_chain():
    assert found(TRAINING_LOOP) == [
        ("GS501", 21, (BLOCK, "train_step", "log_metrics")),  # logger.info
        ("GS501", 22, (BLOCK, "train_step", "log_metrics")),  # writer.add_scalar
        ("GS503", 23, (BLOCK, "train_step", "log_metrics")),  # HISTORY.append on a global
        ("GS501", 32, (BLOCK, "train_step")),  # print(f"step {step} loss {loss:.3f}")
        ("GS505", 46, (BLOCK,)),  # pbar.update(1) inside the block
    ]


def test_training_loop_look_alikes_stay_silent():
    lines = {line for _, line, _ in found(TRAINING_LOOP)}
    assert 9 not in lines  # logger = logging.getLogger(__name__) at module level
    assert not lines & {15, 16}  # random and print in the data loader: not reachable
    assert not lines & {51, 52}  # logging and the progress bar after replay: outside the region


def test_print_of_a_bare_tensor_is_gs104_only_but_a_formatted_one_is_both():
    all_codes = [(d.code, d.start.line) for d in diagnostics(TRAINING_LOOP)]
    assert ("GS104", 31) in all_codes and ("GS501", 31) not in all_codes  # print(loss)
    assert ("GS104", 32) in all_codes and ("GS501", 32) in all_codes  # the f-string syncs; the print is host work


def test_logger_class_of_the_project():
    source = """
        import torch


        class MetricsLogger:
            def __init__(self):
                self.rows = []

            def log(self, row: dict) -> None:
                self.rows.append(row)


        def eval_step(model, x: torch.Tensor, metrics: MetricsLogger):  # graphsafe: region
            y = model(x)
            metrics.log({"n": x.shape[0]})
            return y
    """
    assert found(source) == [("GS503", 10, ("eval_step", "MetricsLogger.log")), ("GS501", 15, ("eval_step",))]


MODEL = """\
import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.history = []
        self.stats = {}
        self.rng = np.random.default_rng(0)

    def forward(self, x):
        h = self.proj(x)
        scale = self.rng.uniform(0.9, 1.1)
        h = h * scale
        self.record(h)
        return self.rope(h)

    def record(self, h):
        steps = []
        steps.append(h)
        self.history.append(h)
        self.stats["last"] = h
        self.meter.update(h)
        self.pbar.update(1)

    def rope(self, h: torch.Tensor):
        key = id(h)
        if key not in self.cache:
            self.cache[key] = torch.ones_like(h)
        return h * self.cache[key]

    def setup_progress(self, n):
        self.pbar = tqdm(total=n)
        self.cache = {}
        self.meter = Meter()


class Meter:
    def update(self, value):
        pass


def build():
    model = Decoder().cuda()
    x = torch.zeros(4, 16, device="cuda")
    return torch.cuda.make_graphed_callables(model, (x,))
"""


def test_module_state_is_reported_with_bindings_found_anywhere_in_the_file():
    region = "Decoder.forward"
    assert found(MODEL) == [
        ("GS502", 17, (region,)),  # self.rng.uniform: rng bound in __init__
        ("GS503", 25, (region, "Decoder.record")),  # self.history.append
        ("GS503", 26, (region, "Decoder.record")),  # self.stats["last"] = h
        ("GS505", 28, (region, "Decoder.record")),  # self.pbar.update: bound later, in setup_progress
        ("GS506", 31, (region, "Decoder.rope")),  # id(h)
        ("GS503", 33, (region, "Decoder.rope")),  # self.cache[key] = ...: cache bound later
    ]


def test_local_lists_and_non_containers_are_not_accumulation():
    lines = {line for _, line, _ in found(MODEL)}
    assert 24 not in lines  # steps.append on a list built in the same function
    assert 27 not in lines  # self.meter.update: a Meter, not a container


def test_messages_say_what_goes_wrong_on_replay():
    by_line = {d.start.line: d.message for d in diagnostics(MODEL)}
    assert by_line[25] == (
        "`self.history.append()` changes `self.history`, an attribute of self, once, at capture; "
        "replays never change it: replay is silently wrong"
    )
    assert "every replay reuses that value" in by_line[17]
    assert "never on replay" in by_line[28]


def test_file_io_and_clock_in_a_compiled_step():
    source = """
        import json
        import time
        from pathlib import Path

        import torch


        def save(step_out):
            torch.save(step_out, "out.pt")
            Path("done.txt").write_text("ok")


        @torch.compile(mode="reduce-overhead")
        def step(x):
            t0 = time.perf_counter()
            y = x * 2
            save(y)
            return y


        def report(path, metrics):
            json.dump(metrics, open(path, "w"))
            torch.save(metrics, path)
    """
    assert found(source) == [
        ("GS504", 10, ("step", "save")),
        ("GS504", 11, ("step", "save")),
        ("GS502", 16, ("step",)),
    ]


def test_data_ptr_cache_and_identity_checks():
    source = """
        import torch


        class Cache:
            def __init__(self):
                self.table = {}

            def lookup(self, t):
                hit = self.table.get(t.data_ptr())
                same = t.data_ptr() == self.last_ptr
                aligned = t.data_ptr() % 16 == 0
                return hit, same, aligned

            def forward(self, t: torch.Tensor):  # graphsafe: region
                return self.lookup(t)
    """
    assert found(source) == [("GS506", 10, ("Cache.forward", "Cache.lookup")),
                             ("GS506", 11, ("Cache.forward", "Cache.lookup"))]


def test_lightning_and_wandb_logging():
    source = """
        import torch
        import wandb
        from lightning import LightningModule

        run = wandb.init(project="p")


        class Net(LightningModule):
            def training_step(self, batch, idx):  # graphsafe: region
                loss = self.model(batch).sum()
                self.log("train/loss", loss)
                run.log({"loss": loss})
                self.logger.experiment.add_histogram("w", self.model.weight)
                return loss
    """
    assert [(c, line) for c, line, _ in found(source)] == [("GS501", 12), ("GS501", 13), ("GS501", 14)]


def test_own_log_method_is_not_lightning_logging():
    source = """
        import torch


        class Dist:
            def log(self, x):
                return torch.log(x)

            def forward(self, x: torch.Tensor):  # graphsafe: region
                return self.log(x)
    """
    assert codes(source) == []


def test_nothing_outside_regions():
    source = """
        import logging
        import random
        import time

        log = logging.getLogger(__name__)
        HISTORY = []


        def step(x):
            log.info("x")
            HISTORY.append(x)
            random.seed(time.time())
            print(id(x))
    """
    assert codes(source) == []
