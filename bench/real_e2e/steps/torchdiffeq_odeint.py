"""torchdiffeq: a neural-ODE forward solve, `ys = odeint(func, y0, t, rtol=1e-5, atol=1e-6)`.

As the labellers assumed: the default adaptive method (dopri5), a single device tensor y0,
`t` a 1-D device tensor kept in one buffer, `func` a small nn.Module. No state is kept between
solves, so state() is empty and the solutions are compared.
"""
import torch
from torch import nn

from bench.real_e2e.step_api import Built

PACKAGE = "torchdiffeq"
KIND = "solver"
REGION = "torchdiffeq/_impl/odeint.py::odeint"
EXTRA = []  # torch and scipy (CPU_DEPS)

BATCH, DIM, HIDDEN, TIMES = 32, 8, 64, 5


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, DIM))

    def forward(self, t, y):
        return self.net(y)


def build(device: str, seed: int) -> Built:
    from torchdiffeq import odeint

    torch.manual_seed(seed)
    func = ODEFunc().to(device)
    t = torch.linspace(0.0, 1.0, TIMES, device=device)

    def inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
        return (torch.randn(BATCH, DIM, generator=gen).to(device),)

    @torch.no_grad()
    def step(y0):
        return odeint(func, y0, t, rtol=1e-5, atol=1e-6)

    return Built(step=step, inputs=inputs, state=lambda: {})
