"""AdamW that keeps its moments in host pages and brings them to the device for each step."""

from __future__ import annotations

import torch


class PagedAdamW(torch.optim.Optimizer):
    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0, pin_pages: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.pin_pages = pin_pages
        self.pages: dict[int, torch.Tensor] = {}
        self.step_count = 0

    def _page_in(self, key: int, p: torch.Tensor) -> torch.Tensor:
        if key not in self.pages:
            if self.pin_pages:
                self.pages[key] = torch.zeros((2,) + tuple(p.shape), pin_memory=True)  # expect: GS406, GS503
            else:
                self.pages[key] = torch.zeros((2,) + tuple(p.shape))  # expect: GS503
        return self.pages[key].to(p.device, non_blocking=True)  # expect: GS402

    @torch.no_grad()
    def step(self, closure=None):
        self.step_count += 1  # expect: GS302
        for gi, group in enumerate(self.param_groups):
            beta1, beta2 = group["betas"]
            bc1 = 1.0 - beta1 ** self.step_count
            bc2 = 1.0 - beta2 ** self.step_count
            for i, p in enumerate(group["params"]):
                if p.grad is None:
                    continue
                key = gi * 100_000 + i
                moments = self._page_in(key, p)
                exp_avg, exp_avg_sq = moments[0], moments[1]
                exp_avg.lerp_(p.grad, 1.0 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
                p.mul_(1.0 - group["lr"] * group["weight_decay"])
                denom = (exp_avg_sq / bc2).sqrt_().add_(group["eps"])  # expect: GS301
                p.addcdiv_(exp_avg, denom, value=-group["lr"] / bc1)  # expect: GS301
                self.pages[key] = moments.to("cpu", non_blocking=True)  # expect: GS103, GS503
        return None
