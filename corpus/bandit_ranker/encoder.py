import torch
import torch.nn as nn


class ContextEncoder(nn.Module):
    def __init__(self, context_dim: int, dim: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(context_dim, 16), nn.GELU(), nn.Linear(16, dim))
        self.norm = nn.LayerNorm(dim)

    def forward(self, ctx: torch.Tensor) -> torch.Tensor:
        if ctx.dim() == 1:
            ctx = ctx.unsqueeze(0)
        h = self.norm(self.net(ctx))
        while h.norm() > 1e3:  # expect: GS201
            h = h / 2
        assert torch.isfinite(h).all(), "encoder produced non-finite features"  # expect: GS201
        return h


def slate_click_positions(clicks: torch.Tensor) -> list:
    positions = []
    for pos in range(clicks.sum()):  # expect: GS105
        positions.append(pos)
    return positions
