"""torchdiffeq: one adaptive Dormand-Prince step, `rk_state = solver._adaptive_step(rk_state)`.

The solver is set up as `odeint(func, y0, t, method="dopri5")` does it (`_check_inputs`,
`SOLVERS["dopri5"]`, `_before_integrate`), around a small MLP vector field driven by a control
signal u (a buffer of the field). Each step copies that step's u into the buffer, takes one
adaptive step (accepted or rejected by the solver's error estimate) and writes the new RK state
into the tensors of the old one, so the state keeps its addresses from step to step.
"""
import torch
from torch import nn

from bench.real_e2e.step_api import Built

PACKAGE = "torchdiffeq"
KIND = "solver"
REGION = "torchdiffeq/_impl/rk_common.py::RKAdaptiveStepsizeODESolver._adaptive_step"
EXTRA = []  # torch; numpy and scipy at import (in the GPU image; CPU_DEPS on the CPU side)

BATCH, DIM, HIDDEN, T_END = 32, 8, 64, 10.0


class ControlledODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, DIM))
        self.register_buffer("u", torch.zeros(BATCH, DIM))

    def forward(self, t, y):
        return self.net(y) + 0.1 * self.u


def _copy_state(live, new) -> None:
    """Write an RK state (a namedtuple of tensors and a list of interpolation tensors) into another."""
    for dst, src in zip(live, new):
        if isinstance(dst, torch.Tensor):
            dst.copy_(src)
        else:
            _copy_state(dst, src)


def build(device: str, seed: int) -> Built:
    from torchdiffeq._impl.misc import _check_inputs
    from torchdiffeq._impl.odeint import SOLVERS

    torch.manual_seed(seed)
    field = ControlledODEFunc().to(device)
    y0 = torch.randn(BATCH, DIM, generator=torch.Generator().manual_seed(seed)).to(device)
    t = torch.tensor([0.0, T_END], device=device)
    _, func, y0, t, rtol, atol, method, options, _, _ = _check_inputs(field, y0, t, 1e-5, 1e-6, "dopri5", None, None,
                                                                      SOLVERS)
    solver = SOLVERS[method](func=func, y0=y0, rtol=rtol, atol=atol, **options)
    solver._before_integrate(t)
    # Own, distinct tensors for every field (the first state shares y0 among them).
    solver.rk_state = type(solver.rk_state)(*[v.clone() if isinstance(v, torch.Tensor) else [c.clone() for c in v]
                                              for v in solver.rk_state])

    @torch.no_grad()
    def step(u):
        field.u.copy_(u)
        new = solver._adaptive_step(solver.rk_state)
        _copy_state(solver.rk_state, new)
        return new.y1, new.dt

    def inputs(i: int) -> tuple:
        return (torch.randn(BATCH, DIM, generator=torch.Generator().manual_seed(seed * 1_000_003 + i)).to(device),)

    def state() -> dict:
        names = ("y1", "f1", "t0", "t1", "dt")
        live = dict(zip(names, solver.rk_state[:5]))
        live.update({f"interp_coeff.{k}": c for k, c in enumerate(solver.rk_state.interp_coeff)})
        return live

    return Built(step=step, inputs=inputs, state=state)
