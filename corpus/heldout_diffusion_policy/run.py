"""Entry point for the corpus runner: train a few diffusion-policy steps and roll out, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import PolicyConfig  # noqa: E402
from data import make_batch  # noqa: E402
from ensemble import TemporalEnsembler  # noqa: E402
from history import ObsHistory  # noqa: E402
from policy import DiffusionPolicy  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = PolicyConfig(seed=seed)
    device = torch.device("cpu")
    policy = DiffusionPolicy(cfg, device)
    g = torch.Generator().manual_seed(seed + 1)
    if device.type == "cuda":
        policy.capture_train()
        policy.capture_denoise()
    losses = []
    for _ in range(steps):
        obs, actions, is_pad = make_batch(cfg, g)
        losses.append(float(policy.train_on(obs, actions, is_pad)))
    history = ObsHistory(cfg.n_obs_steps)
    ensembler = TemporalEnsembler(cfg.n_action_steps, cfg.ensemble_k)
    obs = torch.randn(cfg.obs_dim, generator=g)
    history.reset(obs)
    executed = []
    for _ in range(2):
        chunk = policy.predict_action(history.push(obs))
        ensembler.add(chunk)
        action = ensembler.act()
        executed.append(sum(abs(a) for a in action))
        obs = obs * 0.9
    return {
        "last_loss": losses[-1],
        "loss_sum": float(sum(losses)),
        "action_abs_sum": float(sum(executed)),
        "ema_param_sum": float(sum(p.sum() for p in policy.ema.averaged.parameters())),
        "global_step": float(policy.global_step),
        "clipped": float(policy.stats.get("clipped", 0)),
        "trace_len": float(len(policy.denoise_trace)),
    }


if __name__ == "__main__":
    print(run())
