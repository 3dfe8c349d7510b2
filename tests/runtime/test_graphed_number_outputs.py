"""A Python number a graphed step returns is the capture's on every replay (a replay runs no Python):
one that changes from call to call (a loss summed from `.item()` terms, as pyro's Trace_ELBO
returns) is refused with its place; one that does not change is returned as before."""

from __future__ import annotations

import pytest
import torch

from graphsafe.runtime import graphed
from graphsafe.runtime.graphed import GraphedInputError


def make_step():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        total = 0.0
        total += loss.item()  # a host number of this call
        return loss.detach(), total, x.shape[0]

    return step, opt


def test_a_python_number_output_that_changes_per_call_is_refused_with_its_place():
    step, opt = make_step()
    with pytest.raises(GraphedInputError, match=r"output\[1\] is a Python number that changes from call to call"):
        graphed(step, (torch.randn(8, 4), torch.randn(8, 1)), train=True, optimizer=opt, backend="eager")


def test_a_python_number_output_that_stays_the_same_is_returned():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)

    def predict(x):
        return model(x), x.shape[0], 0.5

    g = graphed(predict, (torch.randn(8, 4),), backend="eager", pad=False)
    out, rows, half = g(torch.randn(8, 4))
    assert (rows, half) == (8, 0.5) and out.shape == (8, 1)
