"""Muon: momentum SGD whose 2-D updates are orthogonalised with Newton-Schulz iterations."""

from __future__ import annotations

import torch


def zeropower_via_newtonschulz5(G: torch.Tensor, steps: int = 5, eps: float = 1e-7) -> torch.Tensor:
    assert G.ndim == 2, "Newton-Schulz orthogonalisation needs a matrix"
    a, b, c = (3.4445, -4.7750, 2.0315)
    X = G.float()
    transposed = G.size(0) > G.size(1)
    if transposed:
        X = X.T
    X = X / (X.norm() + eps)
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * A @ A
        X = a * X + B @ X
    if transposed:
        X = X.T
    return X


class Muon(torch.optim.Optimizer):
    def __init__(self, params, lr: float = 0.02, momentum: float = 0.95, nesterov: bool = True, ns_steps: int = 5, weight_decay: float = 0.0):
        defaults = dict(momentum=momentum, nesterov=nesterov, ns_steps=ns_steps, weight_decay=weight_decay)
        super().__init__(params, defaults)
        first = self.param_groups[0]["params"][0]
        self.lr_t = torch.full((), lr, device=first.device)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["momentum_buffer"] = torch.zeros_like(p)

    def set_lr(self, lr: float) -> None:
        self.lr_t.fill_(lr)  # expect: GS301

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                buf = self.state[p]["momentum_buffer"]
                buf.mul_(group["momentum"]).add_(p.grad)
                g = p.grad.add(buf, alpha=group["momentum"]) if group["nesterov"] else buf
                update = zeropower_via_newtonschulz5(g, steps=group["ns_steps"])
                if not torch.isfinite(update).all():  # expect: GS201
                    continue
                scale = max(1.0, p.size(0) / p.size(1)) ** 0.5
                if group["weight_decay"] > 0:
                    p.mul_(1.0 - self.lr_t * group["weight_decay"])
                p.sub_(update.to(p.dtype) * (self.lr_t * scale))
        return None
