"""Entry point for the corpus runner: a short MPC episode loop with CEM planning, on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from agent import EpisodeLogger, MPCAgent  # noqa: E402
from config import PlannerConfig  # noqa: E402
from env import PointMass  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = PlannerConfig(seed=seed)
    agent = MPCAgent(cfg, torch.device("cpu"))
    env = PointMass(cfg.obs_dim, cfg.act_dim, cfg.goal, seed)
    log = EpisodeLogger()
    model_losses = []
    for episode in range(steps):
        obs = env.reset()
        ret = 0.0
        transitions = []
        for t in range(cfg.episode_len):
            action = agent.act(obs, t)
            next_obs, reward = env.step(action.detach())
            transitions.append((obs, action.detach(), next_obs, reward))
            ret += reward
            obs = next_obs
        o = torch.stack([tr[0] for tr in transitions])
        a = torch.stack([tr[1] for tr in transitions])
        n = torch.stack([tr[2] for tr in transitions])
        r = torch.tensor([tr[3] for tr in transitions])
        model_losses.append(agent.update_models(o, a, n, r))
        agent.end_episode()
        log.log(episode=float(episode), ret=ret, plans=float(agent.planner.plans_made))
    return {
        "last_return": float(log.episodes[-1]["ret"]),
        "return_sum": float(sum(e["ret"] for e in log.episodes)),
        "last_model_loss": float(model_losses[-1]),
        "plans_made": float(agent.planner.plans_made),
        "bonus_coef": float(agent.planner.bonus_coef),
        "noise_scale": float(agent.noise_scale),
        "trajectory_len": float(agent.planner.trajectory.shape[0]),
    }


if __name__ == "__main__":
    print(run())
