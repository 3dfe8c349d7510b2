"""What a `raise` statement evaluates runs only when the step fails, eagerly too: no hazard."""

from __future__ import annotations

from tests.helpers import codes


def test_a_message_built_from_tensors_in_a_raise_is_not_reported_but_its_condition_is():
    source = """
        import torch


        def update(y_pred: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            if y.max() + 1 > y_pred.size(1):
                raise ValueError(f"invalid class {y.max().item() + 1} in {y}")
            return y_pred.argmax(1) == y
    """
    assert codes(source) == ["GS201"]


def test_the_same_reads_outside_a_raise_are_reported():
    source = """
        import torch


        def update(y_pred: torch.Tensor, y: torch.Tensor):  # graphsafe: region
            message = f"invalid class {y.max().item() + 1} in {y}"
            return y_pred.argmax(1) == y, message
    """
    assert codes(source) == ["GS101", "GS104"]
