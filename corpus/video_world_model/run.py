"""Entry point for the corpus runner: train the world model on synthetic moving-square clips, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import random  # noqa: E402

import torch  # noqa: E402

from config import WorldModelConfig  # noqa: E402
from trainer import WorldModelTrainer  # noqa: E402


def moving_squares(cfg: WorldModelConfig, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    frames = torch.zeros(cfg.batch, cfg.frames, cfg.channels, cfg.size, cfg.size)
    actions = torch.zeros(cfg.batch, cfg.frames, cfg.action_dim)
    for b in range(cfg.batch):
        x, y = (int(v) for v in torch.randint(0, cfg.size - 2, (2,), generator=gen))
        for t in range(cfg.frames):
            a = int(torch.randint(0, cfg.action_dim, (1,), generator=gen))
            actions[b, t, a] = 1.0
            x = max(0, min(cfg.size - 2, x + a - 1))
            frames[b, t, :, y : y + 2, x : x + 2] = 1.0
    return frames, actions


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = WorldModelConfig(seed=seed)
    device = torch.device(cfg.device)
    trainer = WorldModelTrainer(cfg, device)
    gen = torch.Generator().manual_seed(seed + 5)
    clips = [moving_squares(cfg, gen) for _ in range(steps)]
    if device.type == "cuda":
        trainer.graph_loss(*clips[0])
    losses = [trainer.train_step(f.to(device), a.to(device)) for f, a in clips]
    m = trainer.loss_module
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "teacher_forcing_p": float(m.teacher_forcing_p),
        "kl": float(m.metrics["kl"]),
        "psnr": float(m.last_psnr),
        "running_recon": float(m.running_recon),
        "rollouts": float(m.rollouts),
        "param_sum": float(sum(p.sum() for p in m.parameters())),
    }


if __name__ == "__main__":
    print(run())
