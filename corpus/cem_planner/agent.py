"""Model-based agent: model learning, graphed CEM planning, replanning every step."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from config import PlannerConfig
from models import DynamicsEnsemble, RewardModel
from planner import CEMPlanner
from schedules import noise_at


class EpisodeLogger:
    def __init__(self):
        self.episodes: list[dict[str, float]] = []

    def log(self, **values: float) -> None:
        self.episodes.append(values)


class MPCAgent:
    def __init__(self, cfg: PlannerConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.dynamics = DynamicsEnsemble(cfg).to(device)
        self.reward = RewardModel(cfg).to(device)
        self.planner = CEMPlanner(cfg, self.dynamics, self.reward, device)
        params = list(self.dynamics.parameters()) + list(self.reward.parameters())
        self.model_opt = torch.optim.Adam(params, lr=1e-3)
        self.fast_dynamics = torch.compile(self.dynamics)
        self.static_obs = torch.zeros(cfg.obs_dim, device=device)
        self.static_action = None
        self.static_next = None
        self.graph = None
        self.noise_scale = cfg.noise_start
        self.action_trace: list[torch.Tensor] = []
        self.env_steps = 0

    def plan_step(self, obs: torch.Tensor, noise_scale: float, t: int) -> torch.Tensor:
        if self.cfg.pin_host:
            obs = obs.pin_memory()  # expect: GS406
        action = self.planner.plan(obs, noise_scale, t)
        low = torch.as_tensor([-1.0] * self.cfg.act_dim)  # expect: GS402
        return torch.maximum(action, low.to(action.device))

    def capture(self, t: int) -> None:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                self.plan_step(self.static_obs, self.noise_scale, t)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.float16):  # expect: GS702
            with torch.cuda.graph(g, capture_error_mode="thread_local"):
                self.static_action = self.plan_step(self.static_obs, self.noise_scale, t)
                self.static_next = self.fast_dynamics(self.static_obs[None], self.static_action[None])  # expect: GS709
        self.graph = g

    def act(self, obs: torch.Tensor, t: int) -> torch.Tensor:
        self.noise_scale = noise_at(self.env_steps, self.cfg.noise_start, self.cfg.noise_end, self.cfg.noise_steps)
        self.env_steps += 1
        if self.device.type == "cuda":
            if self.graph is None:
                self.capture(t)
            self.static_obs.copy_(obs)
            self.graph.replay()
            self.action_trace.append(self.static_next)  # expect: GS407
            return self.static_action.clone()
        return self.plan_step(obs, self.noise_scale, t)

    def end_episode(self) -> None:
        p = self.planner
        p.bonus_coef = max(self.cfg.min_bonus, p.bonus_coef * self.cfg.bonus_decay)
        p.temperature = max(0.1, p.temperature * 0.95)

    def update_models(self, obs, act, next_obs, rew) -> float:
        preds = self.dynamics(obs, act)
        dyn_loss = F.mse_loss(preds, next_obs.expand_as(preds))
        rew_loss = F.mse_loss(self.reward.net(torch.cat([obs, act], -1)).squeeze(-1), rew)
        loss = dyn_loss + rew_loss
        self.model_opt.zero_grad()
        loss.backward()
        self.model_opt.step()
        return loss.item()
