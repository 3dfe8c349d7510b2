"""GRPO trainer: sample a group per prompt, score on the host, and take one clipped policy step."""

from __future__ import annotations

import copy
import logging

import torch

from advantages import completion_mask, group_advantages
from config import GRPOConfig
from kl import AdaptiveKLController, sync_reference
from policy import CausalLM, token_logprobs
from progress import ProgressBar
from rewards import score_completions
from tokenizer import CharTokenizer

logger = logging.getLogger(__name__)


class GRPOTrainer:
    def __init__(self, cfg: GRPOConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.tok = CharTokenizer()
        cfg.policy.vocab_size = self.tok.vocab_size
        self.policy = CausalLM(cfg.policy).to(device)
        self.ref_model = copy.deepcopy(self.policy).eval()
        for p in self.ref_model.parameters():
            p.requires_grad_(False)
        self.optimizer = torch.optim.AdamW(self.policy.parameters(), lr=cfg.lr, weight_decay=0.0)
        self.scaler = torch.amp.GradScaler("cuda", enabled=cfg.fp16)
        self.kl_ctl = AdaptiveKLController(cfg.init_kl_coef, cfg.kl_target, cfg.kl_horizon)
        self.sample_gen = torch.Generator(device=self.device)
        self.sample_gen.manual_seed(cfg.seed)
        self.temperature = cfg.temperature
        self.step_count = 0
        self.stats: dict[str, float] = {}
        self.sample_log: list[str] = []
        self.kl_window = torch.zeros(cfg.kl_window, device=device)
        self.last_kl = torch.zeros((), device=device)
        self.pbar = ProgressBar(total=cfg.total_steps, desc="grpo")
        self.graph = None
        self.static_prompt_ids = None
        self.static_lens: list[int] = []
        self.static_loss = None

    def _sample(self, input_ids: torch.Tensor) -> torch.Tensor:
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        for _ in range(self.cfg.max_new_tokens):
            logits = self.policy(input_ids)[:, -1, :]
            probs = torch.softmax(logits / self.temperature, dim=-1)  # expect: GS301
            nxt = torch.multinomial(probs, 1, generator=self.sample_gen).squeeze(-1)  # expect: GS601
            nxt = torch.where(done, torch.full_like(nxt, self.tok.pad_id), nxt)
            input_ids = torch.cat([input_ids, nxt[:, None]], dim=1)  # expect: GS404
            done = done | (nxt == self.tok.eos_id)
            if done.all():  # expect: GS201
                break
        return input_ids

    def train_step(self, prompt_ids: torch.Tensor, prompt_lens: list[int]) -> torch.Tensor:
        cfg = self.cfg
        prompt_ids = prompt_ids[:, :max(prompt_lens)]  # expect: GS408
        prompts = prompt_ids.repeat_interleave(cfg.num_generations, dim=0)  # expect: GS107
        self.sample_gen.manual_seed(cfg.seed + self.step_count)  # expect: GS602
        with torch.no_grad():
            tokens = self._sample(prompts)
        completions = tokens[:, prompts.shape[1]:]
        mask = completion_mask(completions, self.tok.eos_id).float()

        scores, texts = score_completions(self.tok, completions, cfg.target_len, cfg.len_weight)
        rewards = torch.tensor(scores, dtype=torch.float32, device=self.device)  # expect: GS402
        adv = group_advantages(rewards, cfg.num_generations, cfg.scale_rewards)

        T = completions.shape[1]
        logp = token_logprobs(self.policy, tokens, T)
        with torch.no_grad():
            ref_logp = token_logprobs(self.ref_model, tokens, T)
        old_logp = logp.detach()
        ratio = torch.exp(logp - old_logp)
        clipped = torch.clamp(ratio, 1.0 - cfg.clip_eps, 1.0 + cfg.clip_eps)
        per_token_pg = -torch.min(ratio * adv[:, None], clipped * adv[:, None])
        delta = ref_logp - logp
        per_token_kl = torch.exp(delta) - delta - 1.0
        per_token_loss = per_token_pg + self.kl_ctl.value * per_token_kl  # expect: GS301
        loss = ((per_token_loss * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)).mean()
        assert torch.isfinite(loss), "non-finite GRPO loss"  # expect: GS201

        self.optimizer.zero_grad(set_to_none=False)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.max_grad_norm)
        self.scaler.step(self.optimizer)  # expect: GS703
        self.scaler.update()

        kl_mean = (per_token_kl.detach() * mask).sum() / mask.sum().clamp(min=1.0)
        self.last_kl.copy_(kl_mean)
        self.kl_window.copy_(self.kl_window.roll(1))
        self.kl_window[0] = kl_mean
        if kl_mean > 4 * self.kl_ctl.target:  # expect: GS201
            logger.warning("KL to the reference is far above target")  # expect: GS501

        lengths = mask.sum(dim=1)
        mean_len = lengths.mean().item()  # expect: GS101
        max_len = int(lengths.max())  # expect: GS105
        self.stats.update(response_len_mean=mean_len, response_len_max=max_len)  # expect: GS503
        self.sample_log.extend(texts[:cfg.log_samples])  # expect: GS503

        self.step_count += 1  # expect: GS302
        if self.step_count % cfg.ref_sync_every == 0:  # expect: GS301
            sync_reference(self.ref_model, self.policy, cfg.ref_sync_mix)
        self.pbar.update(1)  # expect: GS505
        return loss.detach()

    def capture(self, prompt_ids: torch.Tensor, prompt_lens: list[int]) -> None:
        self.static_prompt_ids = prompt_ids.to(self.device).clone()
        self.static_lens = list(prompt_lens)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(11):
                self.train_step(self.static_prompt_ids, self.static_lens)
        torch.cuda.current_stream().wait_stream(side)
        ref_probe = torch.compile(token_logprobs, dynamic=False)
        probe_ids = torch.zeros(2, self.cfg.max_new_tokens + 2, dtype=torch.long, device=self.device)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_loss = self.train_step(self.static_prompt_ids, self.static_lens)
            self.static_probe = ref_probe(self.ref_model, probe_ids, self.cfg.max_new_tokens)  # expect: GS709

    def fit_step(self, prompt_ids: torch.Tensor, prompt_lens: list[int]) -> float:
        if self.graph is not None:
            self.static_prompt_ids = prompt_ids.to(self.device)  # expect: GS401
            self.graph.replay()
            loss = float(self.static_loss)
        else:
            loss = float(self.train_step(prompt_ids.to(self.device), prompt_lens))
        self.kl_ctl.update(float(self.last_kl), n_steps=prompt_ids.shape[0])
        self.temperature = max(self.cfg.min_temperature, self.temperature * self.cfg.temperature_decay)
        return loss
