"""Attributes the code itself declares tensors, without assigning one: a torchmetrics state
added with a tensor default (`self.add_state("total", default=torch.tensor(0))`), and an
attribute asserted to be one (`assert isinstance(self.total, Tensor)`). Advancing them in place
(`+= 1`) is device work, not a Python counter (GS302)."""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics

METRIC = textwrap.dedent("""\
    import torch
    from torch import Tensor
    from torchmetrics import Metric


    class LossMetric(Metric):
        def __init__(self):
            super().__init__()
            self.add_state("sum_loss", default=torch.tensor(0.0), dist_reduce_fx="sum")
            self.add_state("total_batches", default=torch.tensor(0), dist_reduce_fx="sum")
            self.add_state("seen", default=0, dist_reduce_fx="sum")

        def update(self, preds: Tensor, targets: Tensor) -> None:  # graphsafe: region
            self.sum_loss += (preds - targets).sum()
            self.total_batches += 1
            self.seen += 1


    class Counted(Metric):
        def update(self, x: Tensor):  # graphsafe: region
            assert isinstance(self.total, Tensor)
            self.total += 1
            return x
""")


def _gs302_lines() -> list[int]:
    return sorted(d.start.line for d in diagnostics(METRIC) if d.code == "GS302")


def test_a_metric_state_added_with_a_tensor_default_is_a_tensor():
    assert 15 not in _gs302_lines()


def test_a_metric_state_added_with_a_number_default_is_a_python_counter():
    assert 16 in _gs302_lines()


def test_an_attribute_asserted_to_be_a_tensor_is_a_tensor():
    assert 22 not in _gs302_lines()
