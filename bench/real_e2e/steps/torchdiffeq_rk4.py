"""torchdiffeq: one fixed-grid RK4 step, `dy, f0 = solver._step_func(func, t0, dt, t1, y)`.

The solver is set up as `odeint(func, y0, t, method="rk4")` does it (`_check_inputs`, then
`SOLVERS["rk4"]`), around a small MLP vector field; the step is the body of
`FixedGridODESolver.integrate`'s loop, with y kept in one buffer (`y.add_(dy)`). The grid
times are 0-d device tensors, as `integrate` passes them.
"""
import torch
from torch import nn

from bench.real_e2e.step_api import Built

PACKAGE = "torchdiffeq"
KIND = "solver"
REGION = "torchdiffeq/_impl/fixed_grid.py::RK4._step_func"
EXTRA = []  # torch; numpy and scipy at import (in the GPU image; CPU_DEPS on the CPU side)

BATCH, DIM, HIDDEN, DT = 32, 8, 64, 0.05


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM + 1, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, DIM))

    def forward(self, t, y):
        return self.net(torch.cat([y, t.expand(y.shape[0], 1)], dim=1))


def build(device: str, seed: int) -> Built:
    from torchdiffeq._impl.misc import _check_inputs
    from torchdiffeq._impl.odeint import SOLVERS

    torch.manual_seed(seed)
    func = ODEFunc().to(device)
    y = torch.randn(BATCH, DIM, generator=torch.Generator().manual_seed(seed)).to(device)
    t = torch.tensor([0.0, DT], device=device)
    _, func, y, t, rtol, atol, method, options, _, _ = _check_inputs(func, y, t, 1e-7, 1e-9, "rk4", None, None,
                                                                     SOLVERS)
    solver = SOLVERS[method](func=func, y0=y, rtol=rtol, atol=atol, **options)

    @torch.no_grad()
    def step(t0, t1):
        dy, f0 = solver._step_func(solver.func, t0, t1 - t0, t1, y)
        y.add_(dy)
        return dy, f0

    def inputs(i: int) -> tuple:
        return torch.tensor(i * DT, device=device), torch.tensor((i + 1) * DT, device=device)

    return Built(step=step, inputs=inputs, state=lambda: {"y": y})
