"""Rainbow agent: the update is captured with torch.cuda.graph on a GPU and replayed per step."""

from __future__ import annotations

import torch

from distributional import project_distribution
from networks import RainbowNet
from replay import PrioritizedReplay
from schedules import beta_by_update
from stats import EpisodeStats, ProgressBar


class RainbowAgent:
    def __init__(self, cfg, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.online = RainbowNet(cfg).to(device)
        self.target = RainbowNet(cfg).to(device)
        self.target.load_state_dict(self.online.state_dict())
        self.opt = torch.optim.Adam(self.online.parameters(), lr=cfg.lr, eps=cfg.adam_eps)
        self.replay = PrioritizedReplay(cfg, device)
        self.support = torch.linspace(cfg.v_min, cfg.v_max, cfg.atoms, device=device)
        self.gamma_n = cfg.gamma**cfg.n_step
        self.sample_gen = torch.Generator(device=self.device)
        self.episodes = EpisodeStats(device)
        self.pbar = ProgressBar(cfg.total_updates)
        self.beta = cfg.beta0
        self.num_updates = 0
        self.max_priority = 1.0
        self.prio_ema = torch.zeros((), device=device)
        self.update_ms: list[float] = []
        self.loss_history: dict = {}
        if cfg.time_updates:
            self.start_evt = torch.cuda.Event(enable_timing=True)
            self.end_evt = torch.cuda.Event(enable_timing=True)
        self.graph = None
        self.static_obs = None
        self.static_loss = None
        self.static_greedy = None

    def act(self, obs: torch.Tensor) -> int:
        with torch.no_grad():
            q = self.online.q_values(obs[None].to(self.device), self.support)
        return int(q.argmax().item())

    def update(self) -> torch.Tensor:
        cfg = self.cfg
        if cfg.time_updates:
            self.start_evt.record()
        self.sample_gen.manual_seed(cfg.seed + self.num_updates)  # expect: GS602
        probs = self.replay.priority_probs(cfg.alpha)
        idx = torch.multinomial(probs, cfg.batch_size, replacement=True, generator=self.sample_gen)  # expect: GS601
        weights = (probs.shape[0] * probs[idx]) ** (-self.beta)  # expect: GS301
        weights = weights / weights.max()
        obs, actions, rewards, next_obs, dones = self.replay.gather(idx)
        discounts = torch.tensor([cfg.gamma**k for k in range(cfg.n_step)], device=self.device)  # expect: GS402
        returns = (rewards * discounts).sum(-1)

        with torch.no_grad():
            self.online.reset_noise()
            self.target.reset_noise()
            next_q = self.online.q_values(next_obs, self.support)
            next_a = next_q.argmax(-1)
            rows = torch.arange(cfg.batch_size, device=self.device)
            next_probs = self.target(next_obs)[rows, next_a]
            target_probs = project_distribution(next_probs, returns, dones, self.gamma_n, self.support, cfg)

        log_probs = self.online(obs, log=True)[rows, actions]
        per_sample = -(target_probs * log_probs).sum(-1)
        if cfg.skip_exploding and (per_sample > cfg.loss_cap).any():  # expect: GS201
            per_sample = per_sample.clamp(max=cfg.loss_cap)
        loss = (weights * per_sample).mean()
        self.opt.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.online.parameters(), cfg.max_grad_norm)
        if any(torch.isnan(p.grad).any() for p in self.online.parameters()):  # expect: GS201
            self.opt.zero_grad(set_to_none=False)
        self.opt.step()  # expect: GS701

        new_prio = per_sample.detach() + cfg.prio_eps
        self.replay.update_priorities(idx, new_prio)
        self.max_priority = max(self.max_priority, new_prio.max().item())  # expect: GS101
        self.prio_ema = 0.99 * self.prio_ema + 0.01 * new_prio.mean()  # expect: GS401
        if self.num_updates % cfg.target_sync == 0:  # expect: GS301
            self.target.load_state_dict(self.online.state_dict())
        self.num_updates += 1  # expect: GS302
        self.episodes.record(returns, dones)
        self.pbar.update(1)  # expect: GS505
        if cfg.time_updates:
            self.end_evt.record()
            ms = self.start_evt.elapsed_time(self.end_evt)  # expect: GS106
            self.update_ms.append(ms)  # expect: GS503
        return loss.detach()

    def capture(self, sample_obs: torch.Tensor) -> None:
        self.static_obs = sample_obs.clone()
        q_values = torch.compile(self.online.q_values, dynamic=False)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.update()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
            self.static_loss = self.update()
            self.static_greedy = q_values(self.static_obs, self.support).argmax(-1)  # expect: GS709

    def train_on(self, it: int) -> torch.Tensor:
        self.beta = beta_by_update(it, self.cfg)
        self.replay.max_priority = self.max_priority
        if self.graph is None:
            return self.update()
        self.graph.replay()
        self.loss_history[it] = self.static_loss  # expect: GS407
        return self.static_loss
