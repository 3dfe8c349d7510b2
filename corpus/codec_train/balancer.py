import torch


class LossBalancer:
    def __init__(self, weights: dict, ema: float, device, total_norm: float = 1.0):
        self.weights = dict(weights)
        self.ema = ema
        self.total_norm = total_norm
        self.norm_ema = {k: torch.ones((), device=device) for k in weights}
        self.observed = 0
        self.norm_log = []

    def grad_norm(self, loss: torch.Tensor, anchor: torch.Tensor) -> torch.Tensor:
        (g,) = torch.autograd.grad(loss, anchor, retain_graph=True)
        return g.norm(p=2) / g.shape[0]

    def balance(self, losses: dict, anchor: torch.Tensor) -> torch.Tensor:
        self.observed += 1  # expect: GS302
        total = torch.zeros((), device=anchor.device)
        wsum = sum(self.weights.values())
        for name, loss in losses.items():
            norm = self.grad_norm(loss, anchor)
            self.norm_ema[name] = self.ema * self.norm_ema[name] + (1 - self.ema) * norm.detach()  # expect: GS401
            self.norm_log.append(norm.detach())  # expect: GS503
            gain = self.total_norm / self.norm_ema[name] if self.norm_ema[name] > 1e-8 else 1.0  # expect: GS201
            scale = self.weights[name] / wsum * gain
            total = total + scale * loss
        return total
