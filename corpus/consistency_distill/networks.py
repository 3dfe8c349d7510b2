import torch
import torch.nn as nn


class Denoiser(nn.Module):
    def __init__(self, channels: int, hidden: int):
        super().__init__()
        self.inp = nn.Conv2d(channels, hidden, 3, padding=1)
        self.t_embed = nn.Sequential(nn.Linear(1, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.mid = nn.Conv2d(hidden, hidden, 3, padding=1)
        self.out = nn.Conv2d(hidden, channels, 3, padding=1)

    def forward(self, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            raise ValueError("expected NCHW input")
        emb = self.t_embed(sigma.log().unsqueeze(-1) / 4.0)
        h = torch.nn.functional.silu(self.inp(x) + emb[:, :, None, None])
        h = torch.nn.functional.silu(self.mid(h))
        return self.out(h)


class FeatureDistance(nn.Module):
    """LPIPS-style distance: normalised conv features compared channel-wise."""

    def __init__(self, channels: int, hidden: int):
        super().__init__()
        self.f1 = nn.Conv2d(channels, hidden, 3, padding=1)
        self.f2 = nn.Conv2d(hidden, hidden, 3, stride=2, padding=1)
        for p in self.parameters():
            p.requires_grad_(False)
        self._target_feats: dict = {}

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        a = torch.relu(self.f1(x))
        b = torch.relu(self.f2(a))
        return [a / (a.norm(dim=1, keepdim=True) + 1e-8), b / (b.norm(dim=1, keepdim=True) + 1e-8)]

    def precompute(self, target: torch.Tensor) -> None:
        self._target_feats[id(target)] = self.features(target)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        assert (x.abs() < 1e3).all(), "diverged sample"  # expect: GS201
        cached = self._target_feats.get(id(target))  # expect: GS506
        if cached is None:
            cached = self.features(target)
        fx = self.features(x)
        return sum(((a - b) ** 2).mean(dim=(1, 2, 3)) for a, b in zip(fx, cached))
