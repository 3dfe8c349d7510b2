"""Entry point for the corpus runner: a few GRPO steps on synthetic prompts, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import GRPOConfig  # noqa: E402
from data import collate, sample_prompts  # noqa: E402
from trainer import GRPOTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = GRPOConfig(seed=seed)
    device = torch.device("cpu")
    trainer = GRPOTrainer(cfg, device)
    g = torch.Generator().manual_seed(seed + 1)
    losses = []
    for _ in range(steps):
        prompts = sample_prompts(trainer.tok, cfg.batch_prompts, cfg.max_prompt_len, g)
        ids, lens = collate(prompts, trainer.tok.pad_id, cfg.max_prompt_len)
        losses.append(trainer.fit_step(ids, lens))
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "kl_coef": float(trainer.kl_ctl.value),
        "temperature": float(trainer.temperature),
        "kl_window_sum": float(trainer.kl_window.sum()),
        "mean_len": float(trainer.stats["response_len_mean"]),
        "policy_param_sum": float(sum(p.detach().sum() for p in trainer.policy.parameters())),
        "ref_param_sum": float(sum(p.sum() for p in trainer.ref_model.parameters())),
        "step_count": float(trainer.step_count),
    }


if __name__ == "__main__":
    print(run())
