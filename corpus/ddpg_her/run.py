"""Entry point for the corpus runner: collect episodes, relabel with HER and run DDPG updates, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from agent import DDPGAgent  # noqa: E402
from config import HERConfig  # noqa: E402
from env import PointGoal  # noqa: E402
from her import HERBuffer, goal_reward  # noqa: E402


def collect(agent: DDPGAgent, env: PointGoal, buf: HERBuffer, cfg: HERConfig, episodes: int) -> torch.Tensor:
    returns = []
    for _ in range(episodes):
        o = env.reset()
        obs, ag, g, acts = [o["observation"]], [o["achieved_goal"]], [], []
        agent.noise.reset()
        for _ in range(cfg.episode_len):
            a = agent.act(o["observation"].unsqueeze(0), o["desired_goal"].unsqueeze(0), explore=True)
            g.append(o["desired_goal"])
            o = env.step(a)
            obs.append(o["observation"])
            ag.append(o["achieved_goal"])
            acts.append(a)
        ep_g = torch.stack(g)
        buf.store_episode(torch.stack(obs), torch.stack(ag), ep_g, torch.stack(acts))
        returns.append(goal_reward(torch.stack(ag[1:]), ep_g, cfg.distance_threshold).sum())
    return torch.stack(returns)


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = HERConfig(seed=seed)
    device = torch.device("cpu")
    agent = DDPGAgent(cfg, device)
    env = PointGoal(cfg, seed)
    buf = HERBuffer(cfg, seed)
    returns = collect(agent, env, buf, cfg, 4)
    agent.observe_returns(returns)
    batches = [buf.sample(cfg.batch_size) for _ in range(steps + cfg.learning_starts)]
    if device.type == "cuda":
        agent.capture()
    total = agent.train(batches)
    return {
        "critic_loss_total": float(total),
        "last_critic_loss": float(agent.static_critic_loss),
        "n_updates": float(agent.n_updates),
        "q_success": float(agent.stats.get("q_success", 0.0)),
        "obs_mean_sum": float(agent.o_norm.mean.sum()),
        "actor_param_sum": float(sum(p.sum() for p in agent.actor.parameters())),
        "critic_target_sum": float(sum(p.sum() for p in agent.critic_target.parameters())),
        "q_max": float(agent.q_max),
        "success_rate": float(buf.last_success_rate),
    }


if __name__ == "__main__":
    print(run())
