import torch
import torch.nn as nn


class DiagonalGaussianPosterior(nn.Module):
    def __init__(self, n_items: int, dim: int, prior_var: float, noise_var: float):
        super().__init__()
        self.prior_precision = 1.0 / prior_var
        self.noise_var = noise_var
        self.register_buffer("precision", torch.full((n_items, dim), self.prior_precision))
        self.register_buffer("b", torch.zeros(n_items, dim))
        self.n_updates = 0

    @property
    def mean(self) -> torch.Tensor:
        return self.b / self.precision

    @property
    def std(self) -> torch.Tensor:
        return self.precision.rsqrt()

    def update(self, feats: torch.Tensor, onehot: torch.Tensor, rewards: torch.Tensor, weights: torch.Tensor, forget: float):
        if feats.shape[0] != onehot.shape[0]:
            raise ValueError("feature/item batch mismatch")
        w = (weights / self.noise_var).unsqueeze(-1)
        item_sq = onehot.float().t() @ (w * feats.pow(2))
        item_xy = onehot.float().t() @ (w * feats * rewards.unsqueeze(-1))
        self.precision.mul_(forget).add_(item_sq + (1 - forget) * self.prior_precision)  # expect: GS301
        self.b.mul_(forget).add_(item_xy)  # expect: GS301
        self.n_updates += 1  # expect: GS302
        if (self.precision <= 0).any():  # expect: GS201
            self.precision.clamp_(min=1e-6)


def expected_reward(feats: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
    return feats @ mean.t()
