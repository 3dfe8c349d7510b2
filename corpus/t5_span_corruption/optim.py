import torch


class AdafactorLite(torch.optim.Optimizer):
    def __init__(self, params, lr: float = 1e-2, beta2: float = 0.999, eps: float = 1e-30):
        super().__init__(params, dict(lr=lr, beta2=beta2, eps=eps))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["v"] = torch.zeros_like(p)
                v = state["v"]
                v.mul_(group["beta2"]).addcmul_(p.grad, p.grad, value=1 - group["beta2"])
                update = p.grad / (v.sqrt() + group["eps"])
                update = update / update.pow(2).mean().sqrt().clamp(min=1.0)
                scale = p.pow(2).mean().sqrt().clamp(min=1e-3)
                p.sub_(group["lr"] * scale * update)  # expect: GS301
