"""pytorch-ignite: one metric update, `confusion.update((y_pred, y))`, multiclass.

As an evaluation loop drives it: reset once, then one update per batch of logits and labels
(some labels are -1, "ignore", which the update masks out). compute() reads the matrix and the
example count, so both are the state compared (the count is a Python int in ignite, given here
as a 0-d tensor).
"""
import torch

from bench.real_e2e.step_api import Built

PACKAGE = "pytorch-ignite"
KIND = "metric"
REGION = "ignite/metrics/confusion_matrix.py::ConfusionMatrix.update"
EXTRA = []  # torch and packaging only

BATCH, CLASSES = 256, 10


def build(device: str, seed: int) -> Built:
    from ignite.metrics import ConfusionMatrix

    confusion = ConfusionMatrix(num_classes=CLASSES, device=device)
    confusion.reset()

    def inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
        y_pred = torch.randn(BATCH, CLASSES, generator=gen)
        y = torch.randint(-1, CLASSES, (BATCH,), generator=gen)
        return y_pred.to(device), y.to(device)

    def step(y_pred, y):
        confusion.update((y_pred, y))

    def state() -> dict:
        return {"confusion_matrix": confusion.confusion_matrix,
                "num_examples": torch.tensor(confusion._num_examples)}

    return Built(step=step, inputs=inputs, state=state)
