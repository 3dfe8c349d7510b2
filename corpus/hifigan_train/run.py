"""Entry point for the corpus runner: a few HiFi-GAN training steps on synthetic tones, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from audio import synth_corpus  # noqa: E402
from config import HiFiGANConfig  # noqa: E402
from train import VocoderTrainer, fit  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = HiFiGANConfig(seed=seed)
    device = torch.device("cpu")
    trainer = VocoderTrainer(cfg, device)
    g = torch.Generator().manual_seed(seed + 1)
    clips = synth_corpus(4, int(cfg.sample_rate * cfg.clip_seconds), cfg.sample_rate, g)
    last = fit(trainer, clips, steps, g)
    return {
        "last_g_loss": float(last),
        "d_loss": float(trainer.stats["d_loss"]),
        "lr": float(trainer.lr),
        "fm_weight": float(trainer.fm_weight),
        "global_step": float(trainer.global_step),
        "gen_param_sum": float(sum(p.sum() for p in trainer.gen.parameters())),
    }


if __name__ == "__main__":
    print(run())
