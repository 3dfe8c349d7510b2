"""Dreamer agent: world-model learning, imagination, actor and critic updates."""

from __future__ import annotations

import logging
import time
from collections import defaultdict

import torch
import torch.nn.functional as F

from config import DreamerConfig
from networks import Actor, Critic, Encoder, Head
from returns import ReturnNormalizer, kl_balanced, lambda_returns
from rssm import RSSM

logger = logging.getLogger(__name__)


class DreamerAgent:
    def __init__(self, cfg: DreamerConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        wm = cfg.wm
        self.encoder = Encoder(wm.obs_dim, wm.hidden, wm.embed_dim).to(device)
        self.rssm = RSSM(wm).to(device)
        feat = self.rssm.feat_dim
        self.decoder = Head(feat, wm.hidden, wm.obs_dim).to(device)
        self.reward_head = Head(feat, wm.hidden).to(device)
        self.cont_head = Head(feat, wm.hidden).to(device)
        self.actor = Actor(feat, wm.hidden, wm.act_dim).to(device)
        self.critic = Critic(feat, wm.hidden).to(device)
        self.slow_critic = self.critic.make_slow()
        self.ret_norm = ReturnNormalizer(cfg.ret_low, cfg.ret_high, cfg.ret_decay).to(device)

        self.wm_params = [
            p
            for m in (self.encoder, self.rssm, self.decoder, self.reward_head, self.cont_head)
            for p in m.parameters()
        ]
        self.wm_opt = torch.optim.SGD(self.wm_params, lr=cfg.model_lr, momentum=0.9)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr, eps=1e-5)
        self.critic_opt = torch.optim.AdamW(self.critic.parameters(), lr=cfg.critic_lr, weight_decay=0.0)

        self.imag_gen = torch.Generator(device=device)
        self.imag_gen.manual_seed(cfg.seed + 17)
        self.ent_coef = cfg.ent_coef
        self.updates = 0
        self.episode_returns: list[float] = []
        self.timings: list[float] = []
        self.stats: dict[str, list] = defaultdict(list)
        self.loss_history: list[torch.Tensor] = []
        self.graph = None
        self.static_obs = self.static_act = self.static_rew = self.static_cont = None
        self.static_loss = None

    # ------------------------------------------------------------------ world model
    def _world_model_loss(self, obs, act, rew, cont):
        embed = self.encoder(obs)
        batch, steps, _ = obs.shape
        noise = torch.randn(batch, steps, self.cfg.wm.stoch_dim, generator=self.imag_gen, device=obs.device)  # expect: GS601
        post, prior = self.rssm.observe(embed, act, noise)
        feat = post.feat
        recon = F.mse_loss(self.decoder(feat), obs)
        rew_loss = F.mse_loss(self.reward_head(feat), rew)
        cont_loss = F.binary_cross_entropy_with_logits(self.cont_head(feat), cont)
        kl_loss, kl_value = kl_balanced(post, prior, self.cfg.kl_balance, self.cfg.free_nats)
        total = recon + rew_loss + cont_loss + self.cfg.kl_scale * kl_loss
        return total, feat.detach(), kl_value

    # ------------------------------------------------------------------ imagination
    def _imagine(self, start_feat: torch.Tensor):
        wm = self.cfg.wm
        if self.cfg.reseed_imagination:
            self.imag_gen.manual_seed(self.cfg.seed + self.updates)  # expect: GS602
        deter, stoch = start_feat.split([wm.deter_dim, wm.stoch_dim], -1)
        feats, entropies = [start_feat], []
        for _ in range(self.cfg.horizon):
            mean, std = self.actor(feats[-1].detach())
            eps = torch.empty_like(mean).normal_(generator=self.imag_gen)  # expect: GS601
            action = (mean + std * eps).clamp(-1.0, 1.0)
            state = self.rssm.img_step(deter, stoch, action, torch.randn_like(stoch))
            deter, stoch = state.deter, state.stoch
            feats.append(state.feat)
            entropies.append(torch.log(std).sum(-1))
        return torch.stack(feats), torch.stack(entropies)

    def _update_slow_critic(self) -> None:
        for p, sp in zip(self.critic.parameters(), self.slow_critic.parameters()):
            if torch.allclose(p, sp):  # expect: GS109
                continue
            sp.data.lerp_(p.data, self.cfg.slow_critic_mix)

    def _episode_stats(self, rew: torch.Tensor, cont: torch.Tensor) -> None:
        ended = cont < 0.5
        self.stats["reward_mean"].append(rew.mean().item())  # expect: GS101, GS503
        self.stats["cont_min"].append(cont.min().cpu())  # expect: GS103, GS503
        if ended.any():  # expect: GS201
            idx = ended.nonzero()  # expect: GS107
            for b, t in idx.tolist():  # expect: GS102
                self.episode_returns.append(float(rew[b, : t + 1].sum()))  # expect: GS105, GS503

    # ------------------------------------------------------------------ update
    def train_step(self, obs, act, rew, cont) -> torch.Tensor:
        t0 = time.perf_counter()  # expect: GS502
        wm_loss, post_feat, kl_value = self._world_model_loss(obs, act, rew, cont)
        self.wm_opt.zero_grad(set_to_none=False)
        wm_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.wm_params, self.cfg.grad_clip, error_if_nonfinite=True)  # expect: GS110
        self.wm_opt.step()
        torch.cuda.empty_cache()  # expect: GS405

        start = post_feat.reshape(-1, post_feat.shape[-1])
        feats, ent = self._imagine(start)
        rewards = self.reward_head(feats[1:])
        conts = torch.sigmoid(self.cont_head(feats[1:]))
        values = self.slow_critic(feats)
        returns = lambda_returns(rewards, values, conts, self.cfg.discount, self.cfg.lam)
        discount = torch.tensor(self.cfg.discount, device=returns.device)  # expect: GS402
        weights = torch.cumprod(torch.cat([torch.ones_like(conts[:1]), discount * conts[:-1]]), 0).detach()

        self.ret_norm.update(returns)
        adv = (returns - values[:-1]).detach() / self.ret_norm.scale
        actor_loss = -(weights * adv.detach() * ent).mean() - self.ent_coef * ent.mean()  # expect: GS301
        self.actor_opt.zero_grad(set_to_none=False)
        actor_loss.backward()
        self.actor_opt.step()  # expect: GS701

        critic_pred = self.critic(feats[:-1].detach())
        critic_loss = (weights * (critic_pred - returns.detach()).pow(2)).mean()
        self.critic_opt.zero_grad(set_to_none=False)
        critic_loss.backward()
        self.critic_opt.step()  # expect: GS701

        self.updates += 1  # expect: GS302
        if self.updates % self.cfg.slow_critic_every == 0:  # expect: GS301
            self._update_slow_critic()
        self._episode_stats(rew, cont)
        self.timings.append(time.perf_counter() - t0)  # expect: GS502, GS503
        logger.debug("dreamer update done (%d imagined states)", feats.shape[0] * feats.shape[1])  # expect: GS501
        return (wm_loss + actor_loss + critic_loss).detach() + 0.0 * kl_value

    # ------------------------------------------------------------------ driving
    def capture(self, obs, act, rew, cont) -> None:
        self.static_obs, self.static_act = obs.clone(), act.clone()
        self.static_rew, self.static_cont = rew.clone(), cont.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_obs, self.static_act, self.static_rew, self.static_cont)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.cfg.use_amp):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_obs, self.static_act, self.static_rew, self.static_cont)

    def train_iteration(self, batch) -> float:
        obs, act, rew, cont = (x.to(self.device) for x in batch)
        if self.graph is None:
            loss = self.train_step(obs, act, rew, cont)
            self.loss_history.append(loss.detach())
        else:
            self.static_obs = obs  # expect: GS401
            self.static_act.copy_(act)
            self.static_rew.copy_(rew)
            self.static_cont.copy_(cont)
            self.graph.replay()
            self.loss_history.append(self.static_loss)  # expect: GS407
            loss = self.static_loss
        self.ent_coef = max(self.cfg.ent_min, self.ent_coef * self.cfg.ent_decay)
        if loss.item() > 1e6:
            logger.warning("world-model loss exploded: %.1f", loss.item())
        return float(loss)

    def fit(self, replay, steps: int) -> list[float]:
        if self.device.type == "cuda" and self.graph is None:
            self.capture(*(t.to(self.device) for t in replay.sample(self.cfg.batch_size)))
        return [self.train_iteration(replay.sample(self.cfg.batch_size)) for _ in range(steps)]
