import copy
import json
import time

import torch
from torch import nn

from config import IQLConfig
from losses import clipped_exp_weights, expectile_loss, fraction_positive, polyak, report_outliers


def mlp(i: int, o: int, h: int) -> nn.Module:
    return nn.Sequential(nn.Linear(i, h), nn.ReLU(), nn.Linear(h, o))


class IQLAgent:
    def __init__(self, cfg: IQLConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        d, a, h = cfg.obs_dim, cfg.act_dim, cfg.hidden
        self.q1 = mlp(d + a, 1, h).to(device)
        self.q2 = mlp(d + a, 1, h).to(device)
        self.q1_t = copy.deepcopy(self.q1)
        self.q2_t = copy.deepcopy(self.q2)
        self.v = mlp(d, 1, h).to(device)
        self.actor = mlp(d, a, h).to(device)
        self.q_opt = torch.optim.Adam(list(self.q1.parameters()) + list(self.q2.parameters()), lr=cfg.lr)
        self.v_opt = torch.optim.SGD(self.v.parameters(), lr=cfg.lr, momentum=0.9)
        self.actor_opt = torch.optim.NAdam(self.actor.parameters(), lr=cfg.lr)
        self.obs_mean = torch.zeros(d, device=device)
        self.obs_std = torch.ones(d, device=device)
        self.beta = cfg.beta
        self.updates = 0
        self.stats: list = []
        self.frac_history: list = []
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(7)
        self.graph = None

    def set_normalisation(self, obs: torch.Tensor) -> None:
        self.obs_mean.copy_(obs.mean(0))
        self.obs_std.copy_(obs.std(0).clamp(min=1e-3))

    def refresh_std(self, obs: torch.Tensor) -> None:
        self.obs_std = obs.std(0).clamp(min=1e-3)  # expect: GS401

    def _norm(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.dim() == 1:
            obs = obs.unsqueeze(0)
        return (obs - self.obs_mean) / self.obs_std

    def update(self, obs, act, rew, next_obs, done, bc_weight: float):
        cfg = self.cfg
        t0 = time.perf_counter()  # expect: GS502
        obs = self._norm(obs)
        next_obs = self._norm(next_obs)
        scale = torch.tensor(cfg.reward_scale, device=obs.device)  # expect: GS402
        with torch.no_grad():
            sa = torch.cat([obs, act], -1)
            tq = torch.min(self.q1_t(sa), self.q2_t(sa))
            target = rew * scale + cfg.discount * (1.0 - done) * self.v(next_obs)
        v = self.v(obs)
        v_loss = expectile_loss(tq - v, cfg.expectile)
        self.v_opt.zero_grad(set_to_none=False)
        v_loss.backward()
        self.v_opt.step()

        q_loss = (self.q1(sa) - target).pow(2).mean() + (self.q2(sa) - target).pow(2).mean()
        assert torch.isfinite(q_loss), "critic diverged"  # expect: GS201
        self.q_opt.zero_grad(set_to_none=False)
        q_loss.backward()
        self.q_opt.step()  # expect: GS701

        adv = (tq - v.detach()).squeeze(-1)
        while adv.abs().max() > 1e3:  # expect: GS201
            adv = adv * 0.5
        w = torch.exp(adv * self.beta).clamp(max=cfg.adv_clip)  # expect: GS301
        w_ref = clipped_exp_weights(adv.detach(), cfg.beta, cfg.adv_clip)
        jitter = torch.randn(act.shape, generator=self.gen, device=act.device) * 0.01  # expect: GS601
        pred = self.actor(obs)
        bc = (pred - act - jitter).pow(2).sum(-1) + 0.0 * w_ref
        actor_loss = (w * bc).mean() * bc_weight  # bc_weight is a per-run setting (run.py passes 0.5): not per-step
        self.actor_opt.zero_grad(set_to_none=False)
        actor_loss.backward()
        self.actor_opt.step()  # expect: GS701

        self.updates += 1  # expect: GS302
        if self.updates % cfg.target_every == 0:  # expect: GS301
            polyak(self.q1_t, self.q1, cfg.tau)
            polyak(self.q2_t, self.q2, cfg.tau)
        if (done > 0).any():  # expect: GS201
            terminal = done.nonzero()  # expect: GS107
            self.stats.append(terminal.shape[0])  # expect: GS503
        frac = fraction_positive(adv)
        self.frac_history.append(frac)  # expect: GS503
        report_outliers(adv, 10.0)
        vl = v_loss.item()  # expect: GS101
        if cfg.dump_stats:
            with open("iql_stats.json", "w") as f:  # expect: GS504
                json.dump({"v": vl, "t": time.perf_counter() - t0}, f)  # expect: GS504, GS502
        return q_loss.detach(), v_loss.detach(), actor_loss.detach()

    def capture(self, batch, bc_weight: float):
        self.static = [b.clone() for b in batch]
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.update(*self.static, bc_weight)

    def train_on(self, batches, bc_weight: float) -> dict:
        losses = []
        self.refresh_std(torch.cat([b[0] for b in batches]))
        for batch in batches:
            if self.graph is not None:
                for dst, src in zip(self.static, batch):
                    dst.copy_(src)
                self.graph.replay()
                out = [o.clone() for o in self.out]
            else:
                out = self.update(*batch, bc_weight)
            self.beta = max(1.0, self.beta * self.cfg.beta_decay)
            losses.append([float(o) for o in out])
        return {"q_loss": losses[-1][0], "v_loss": losses[-1][1], "actor_loss": losses[-1][2]}
