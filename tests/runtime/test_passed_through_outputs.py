"""graphed() outputs that are the step's own arguments (an ODE solver's state handed back as part of
the new state) are the caller's tensors, as eagerly: the caller that then writes its state in place
sees them change, as it does without a graph. Outputs that were one tensor stay one."""
from __future__ import annotations

import pytest
import torch

from graphsafe.runtime.graphed import graphed
from tests.runtime.cpu_graph import simulate_cuda_graphs

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def solver_step(y, t, dt):
    """A new state whose coefficients start with the old `y` itself (torchdiffeq's interp_coeff[0])."""
    y_next = y + dt * torch.tanh(y)
    t_next = t + dt
    return y_next, t_next, [y, y_next - y]


def run_solver(step, device="cpu", steps=5) -> list[torch.Tensor]:
    """The caller's loop: the new state written into the live state's tensors, in field order (so
    coefficient 0, the old `y` itself, is read after `y` took its new value)."""
    y = torch.linspace(-1, 1, 12, device=device).reshape(4, 3)
    t, dt = torch.zeros((), device=device), torch.full((), 0.1, device=device)
    coeffs = [torch.zeros(4, 3, device=device), torch.zeros(4, 3, device=device)]
    seen = []
    for _ in range(steps):
        with torch.no_grad():
            y_next, t_next, new_coeffs = step(y, t, dt)
            y.copy_(y_next)
            t.copy_(t_next)
            for live, new in zip(coeffs, new_coeffs):
                live.copy_(new)
        seen.append(torch.cat([y.flatten(), t.reshape(1), *(c.flatten() for c in coeffs)]).cpu())
    return seen


def check_solver_state(device="cpu"):
    step = graphed(solver_step, nvtx_ranges=False)
    for got, expected in zip(run_solver(step, device), run_solver(solver_step, device)):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
    return step


def test_an_output_that_is_an_argument_is_the_callers_tensor_as_eagerly(monkeypatch):
    simulate_cuda_graphs(monkeypatch)
    assert check_solver_state().stats["replays"] == 5


def test_an_argument_passed_through_a_padded_call_is_the_callers_rows(monkeypatch):
    simulate_cuda_graphs(monkeypatch)
    step = graphed(lambda x: (x * 2, x), buckets=[8], nvtx_ranges=False)
    x = torch.arange(15.0).reshape(5, 3)
    with torch.no_grad():
        doubled, same = step(x)
    assert same is x and doubled.shape == (5, 3)


def test_outputs_that_were_one_tensor_stay_one(monkeypatch):
    simulate_cuda_graphs(monkeypatch)

    def twice(x):
        y = x + 1
        return y, y

    step = graphed(twice, batched=[], nvtx_ranges=False)
    with torch.no_grad():
        step(torch.ones(3))
        a, b = step(torch.zeros(3))
    assert a is b and torch.equal(a, torch.ones(3))


@pytest.mark.cuda
@cuda
def test_an_output_that_is_an_argument_is_the_callers_tensor_on_cuda():
    assert check_solver_state("cuda").stats["replays"] == 5
