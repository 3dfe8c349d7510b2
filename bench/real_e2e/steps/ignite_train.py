"""pytorch-ignite: one training iteration, `update(engine, batch)` from `supervised_training_step`.

As an ignite user builds it: `update = supervised_training_step(model, optimizer, loss_fn,
device)` with the default output_transform (the loss as a Python number), run by an `Engine`
whose state the update reads. The Engine advances `state.iteration` outside the update; with
no gradient accumulation every iteration zeroes the gradients and steps the optimizer, so the
iteration is held at 1 here. A small MLP classifier, SGD with momentum, cross-entropy loss.
"""
import torch
from torch import nn

from bench.real_e2e.step_api import Built

PACKAGE = "pytorch-ignite"
KIND = "train"
REGION = "ignite/engine/__init__.py::supervised_training_step.update"
EXTRA = []  # torch and packaging only

BATCH, FEATURES, HIDDEN, CLASSES = 64, 32, 128, 10


def build(device: str, seed: int) -> Built:
    from ignite.engine import Engine, supervised_training_step

    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    update = supervised_training_step(model, optimizer, nn.CrossEntropyLoss(), device=device)
    engine = Engine(update)
    engine.state.iteration = 1

    def step(x, y):
        return update(engine, (x, y))

    def inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
        return (torch.randn(BATCH, FEATURES, generator=gen).to(device),
                torch.randint(CLASSES, (BATCH,), generator=gen).to(device))

    def state() -> dict:
        live = {f"param.{name}": p for name, p in model.named_parameters()}
        for name, p in model.named_parameters():
            buffer = optimizer.state.get(p, {}).get("momentum_buffer")
            if buffer is not None:
                live[f"momentum.{name}"] = buffer
        return live

    return Built(step=step, inputs=inputs, state=state)
