"""pytorch-ignite: one metric update, `accuracy.update((y_pred, y))`, multiclass.

The metric as an evaluation loop drives it: reset once, then one update per batch of logits
and labels; compute() reads `_num_correct / _num_examples`, so both are the state compared
(the example count is a Python int in ignite, given here as a 0-d tensor).
"""
import torch

from bench.real_e2e.step_api import Built

PACKAGE = "pytorch-ignite"
KIND = "metric"
REGION = "ignite/metrics/accuracy.py::Accuracy.update"
EXTRA = []  # torch and packaging only

BATCH, CLASSES = 256, 10


def build(device: str, seed: int) -> Built:
    from ignite.metrics import Accuracy

    accuracy = Accuracy(device=device)
    accuracy.reset()

    def inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
        y_pred = torch.randn(BATCH, CLASSES, generator=gen)
        y = torch.randint(CLASSES, (BATCH,), generator=gen)
        return y_pred.to(device), y.to(device)

    def step(y_pred, y):
        accuracy.update((y_pred, y))

    def state() -> dict:
        return {"num_correct": accuracy._num_correct,
                "num_examples": torch.tensor(accuracy._num_examples)}

    return Built(step=step, inputs=inputs, state=state)
