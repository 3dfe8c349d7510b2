import torch
from torch import nn

from config import MAEConfig


class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        return x + self.fc(self.norm(x))


class TinyMAE(nn.Module):
    def __init__(self, cfg: MAEConfig):
        super().__init__()
        pd = cfg.patch * cfg.patch * cfg.chans
        n = (cfg.img // cfg.patch) ** 2
        self.embed = nn.Linear(pd, cfg.dim)
        self.pos = nn.Parameter(torch.zeros(1, n, cfg.dim))
        self.blocks = nn.ModuleList([Block(cfg.dim) for _ in range(cfg.depth)])
        self.mask_token = nn.Parameter(torch.zeros(1, 1, cfg.dim))
        self.decoder = nn.Sequential(Block(cfg.dim), nn.Linear(cfg.dim, pd))

    def encode(self, patches: torch.Tensor, ids_keep: torch.Tensor) -> torch.Tensor:
        x = self.embed(patches) + self.pos
        x = torch.gather(x, 1, ids_keep.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        for blk in self.blocks:
            x = blk(x)
        return x

    def decode(self, latent: torch.Tensor, ids_restore: torch.Tensor) -> torch.Tensor:
        n, keep, d = latent.shape
        fill = self.mask_token.expand(n, ids_restore.shape[1] - keep, d)
        x = torch.cat([latent, fill], dim=1)
        x = torch.gather(x, 1, ids_restore.unsqueeze(-1).expand(-1, -1, d))
        return self.decoder(x + self.pos)


def layer_decay_groups(model: TinyMAE, base_lr: float, decay: float) -> list:
    depth = len(model.blocks)
    groups = [{"params": list(model.embed.parameters()) + [model.pos], "lr_scale": decay ** (depth + 1)}]
    for i, blk in enumerate(model.blocks):
        groups.append({"params": list(blk.parameters()), "lr_scale": decay ** (depth - i)})
    groups.append({"params": list(model.decoder.parameters()) + [model.mask_token], "lr_scale": 1.0})
    for g in groups:
        g["lr"] = base_lr * g["lr_scale"]
    return groups
