"""torchsde: one Euler-Maruyama step, `y, extra = solver.step(t0, t1, y, extra)`.

The solver is set up as `torchsde.sdeint` does it (check_contract, methods.select) around a
small neural SDE with diagonal noise and a seeded BrownianInterval; the per-step times are
0-d device tensors, as `BaseSDESolver.integrate` passes them.
"""
import torch
from torch import nn

from bench.real_e2e.step_api import Built

PACKAGE = "torchsde"
KIND = "solver"
REGION = "torchsde/_core/methods/euler.py::Euler.step"
# trampoline (pure Python) is not in the GPU image; numpy and scipy are (CPU_DEPS)
EXTRA = [("trampoline", "0.1.2", "36cc9a4ff9811843d177fc0e0740efbd7da39eadfe6e50c9e2937cbc06d899d9")]

BATCH, DIM, HIDDEN, DT, MAX_STEPS = 16, 8, 32, 0.01, 100_000


class NeuralSDE(nn.Module):
    noise_type = "diagonal"
    sde_type = "ito"

    def __init__(self):
        super().__init__()
        self.drift = nn.Sequential(nn.Linear(DIM + 1, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, DIM))
        self.diffusion = nn.Linear(DIM, DIM)

    def f(self, t, y):
        return self.drift(torch.cat([y, t.expand(y.size(0), 1)], dim=1))

    def g(self, t, y):
        return torch.sigmoid(self.diffusion(y))


def build(device: str, seed: int) -> Built:
    import torchsde
    from torchsde._core import methods
    from torchsde._core.sdeint import check_contract

    torch.manual_seed(seed)
    sde = NeuralSDE().to(device)
    y = torch.randn(BATCH, DIM, generator=torch.Generator().manual_seed(seed)).to(device)
    ts = torch.tensor([0.0, DT * MAX_STEPS], device=device)
    bm = torchsde.BrownianInterval(t0=ts[0], t1=ts[-1], size=(BATCH, DIM), device=device, entropy=seed)
    sde, y, ts, bm, method, options = check_contract(sde, y, ts, bm, "euler", False, None, None, False)
    solver = methods.select(method=method, sde_type=sde.sde_type)(
        sde=sde, bm=bm, dt=DT, adaptive=False, rtol=1e-5, atol=1e-4, dt_min=1e-5, options=options)
    extra = solver.init_extra_solver_state(ts[0], y)

    @torch.no_grad()
    def step(t0, t1):
        y1, _ = solver.step(t0, t1, y, extra)
        y.copy_(y1)
        return y1

    def inputs(i: int) -> tuple:
        return (torch.tensor(i * DT, device=device), torch.tensor((i + 1) * DT, device=device))

    return Built(step=step, inputs=inputs, state=lambda: {"y": y})
