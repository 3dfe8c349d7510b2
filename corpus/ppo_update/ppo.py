"""Proximal policy optimisation (CleanRL-style) with advantage normalisation, a clipped surrogate,
value clipping, an entropy bonus that decays per iteration, a KL early-stop flag and statistics.
`PPOLearner.update_minibatch` is the region: on a GPU it is captured once with torch.cuda.graph
(static minibatch buffers, capturable Adam) and replayed per minibatch; on CPU it runs eagerly."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.distributions import Categorical

from policy import ActorCritic
from rollout import GridEnv, compute_gae

logger = logging.getLogger("ppo")


@dataclass
class PPOConfig:
    obs_dim: int = 6
    n_actions: int = 4
    n_envs: int = 4
    n_steps: int = 16
    minibatch: int = 16
    epochs: int = 2
    lr: float = 3e-4
    clip_range: float = 0.2
    vf_clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    ent_decay: float = 0.9
    max_grad_norm: float = 0.5
    target_kl: float = 0.03
    norm_adv: bool = True
    grad_checkpoint: bool = True
    verbose: bool = False


class PPOLearner:
    def __init__(self, cfg: PPOConfig, device: torch.device, writer=None):
        self.cfg = cfg
        self.device = device
        self.policy = ActorCritic(cfg.obs_dim, cfg.n_actions, grad_checkpoint=cfg.grad_checkpoint).to(device)
        on_gpu = device.type == "cuda"
        lr = torch.tensor(cfg.lr, device=device) if on_gpu else cfg.lr
        self.opt = torch.optim.Adam(self.policy.parameters(), lr=lr, eps=1e-5, capturable=on_gpu)
        self.ent_coef = cfg.ent_coef
        self.num_updates = 0
        self.kl_exceeded = False
        self.stats: dict[str, list] = defaultdict(list)
        self.writer = writer
        self.graph: torch.cuda.CUDAGraph | None = None

    def update_minibatch(self, obs, actions, masks, old_logp, advantages, returns, old_values, valid, clip_range: float):
        logits, values = self.policy(obs, masks)
        dist = Categorical(logits=logits)  # expect: GS111
        logp = dist.log_prob(actions)  # expect: GS111
        entropy = dist.entropy()
        if self.cfg.norm_adv and advantages.numel() > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        log_ratio = logp - old_logp
        ratio = log_ratio.exp()
        pg1 = -advantages * ratio
        pg2 = -advantages * ratio.clamp(1 - clip_range, 1 + clip_range)  # expect: GS301
        pg_loss = torch.max(pg1, pg2)[valid].mean()  # expect: GS108
        v_clipped = old_values + (values - old_values).clamp(-self.cfg.vf_clip, self.cfg.vf_clip)
        v_err = torch.max((values - returns) ** 2, (v_clipped - returns) ** 2)
        v_loss = 0.5 * (v_err * valid).sum() / valid.sum().clamp(min=1)
        ent = entropy.mean()
        loss = pg_loss + self.cfg.vf_coef * v_loss - self.ent_coef * ent  # expect: GS301

        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(self.policy.parameters(), self.cfg.max_grad_norm)
        self.opt.step()

        with torch.no_grad():
            approx_kl = ((ratio - 1) - log_ratio).mean()
            clipfrac = ((ratio - 1.0).abs() > clip_range).float().mean()  # expect: GS301
        self.stats["entropy"].append(ent.item())  # expect: GS101, GS503
        self.stats["clipfrac"].append(clipfrac.cpu())  # expect: GS103, GS503
        if self.writer is not None:
            self.writer.add_scalar("losses/approx_kl", approx_kl, self.num_updates)  # expect: GS501
        self.num_updates += 1  # expect: GS302
        if approx_kl > 1.5 * self.cfg.target_kl:  # expect: GS201
            self.kl_exceeded = True
            if self.cfg.verbose:
                print(f"update {self.num_updates}: approx_kl {approx_kl:.4f} over target")  # expect: GS104, GS501
        return loss.detach(), grad_norm

    def _capture(self, batch: dict[str, torch.Tensor]) -> None:
        self.static = {k: v.clone() for k, v in batch.items()}
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.update_minibatch(**self.static, clip_range=self.cfg.clip_range)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_loss, self.static_grad_norm = self.update_minibatch(**self.static, clip_range=self.cfg.clip_range)

    def learn(self, rollout: dict[str, torch.Tensor], clip_range: float, gen: torch.Generator) -> float:
        n = rollout["obs"].shape[0]
        total = torch.zeros(())
        for _ in range(self.cfg.epochs):
            perm = torch.randperm(n, generator=gen)
            for start in range(0, n, self.cfg.minibatch):
                idx = perm[start:start + self.cfg.minibatch]
                batch = {k: v[idx].to(self.device) for k, v in rollout.items()}
                if self.device.type == "cuda":
                    if self.graph is None:
                        self._capture(batch)
                    for k, v in batch.items():
                        self.static[k].copy_(v)
                    self.graph.replay()
                    loss = self.static_loss
                else:
                    loss, _ = self.update_minibatch(**batch, clip_range=clip_range)
                total += loss.detach().cpu()
        self.ent_coef *= self.cfg.ent_decay
        return float(total)


@torch.no_grad()
def collect(env: GridEnv, learner: PPOLearner, cfg: PPOConfig, gen: torch.Generator) -> dict[str, torch.Tensor]:
    policy = learner.policy
    keys = ("obs", "actions", "masks", "old_logp", "old_values", "rewards", "dones", "valid")
    buf: dict[str, list] = {k: [] for k in keys}
    for _ in range(cfg.n_steps):
        obs, mask = env.obs(), env.action_mask()
        policy.obs_norm.update(obs.to(learner.device))
        logits, value = policy(obs.to(learner.device), mask.to(learner.device))
        probs = logits.softmax(-1).cpu()
        actions = torch.multinomial(probs, 1, generator=gen).squeeze(-1)
        logp = probs.gather(1, actions[:, None]).squeeze(1).log()
        valid = env.t > 0  # the first frame after an auto-reset still shows the old episode
        reward, done = env.step(actions)
        for k, v in zip(keys, (obs, actions, mask, logp, value.cpu(), reward, done, valid)):
            buf[k].append(v)
    data = {k: torch.stack(v) for k, v in buf.items()}
    _, last_value = policy(env.obs().to(learner.device))
    adv, returns = compute_gae(data["rewards"], data["old_values"], data["dones"], last_value.cpu())
    flat = {k: data[k].flatten(0, 1) for k in ("obs", "actions", "masks", "old_logp", "old_values", "valid")}
    flat["advantages"], flat["returns"] = adv.flatten(0, 1), returns.flatten(0, 1)
    return flat


def train(cfg: PPOConfig, iterations: int, seed: int, device: torch.device) -> tuple[PPOLearner, list[float]]:
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 7)
    env = GridEnv(cfg.n_envs, seed=seed)
    learner = PPOLearner(cfg, device)
    losses = []
    for it in range(iterations):
        clip_range = cfg.clip_range * (1.0 - it / max(1, iterations))  # annealed per iteration
        rollout = collect(env, learner, cfg, gen)
        losses.append(learner.learn(rollout, clip_range, gen))
        if learner.kl_exceeded:
            logger.info("iteration %d: KL target exceeded", it)
            learner.kl_exceeded = False
    return learner, losses


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    learner, losses = train(PPOConfig(), iterations=4, seed=0, device=dev)
    print("losses", losses, "entropy", learner.stats["entropy"][-1], "updates", learner.num_updates)
