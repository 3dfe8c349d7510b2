from __future__ import annotations

import json
import logging
import os
import time

import torch

from config import Wav2VecConfig
from losses import contrastive_loss, diversity_loss
from masking import masked_targets, sample_negatives, spans_from_starts
from model import Wav2Vec
from schedule import TriStageSchedule, gumbel_temperature

logger = logging.getLogger(__name__)


class PretrainTrainer:
    def __init__(self, cfg: Wav2VecConfig, device: torch.device, workdir: str):
        self.cfg = cfg
        self.device = device
        self.workdir = workdir
        self.model = Wav2Vec(cfg).to(device)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=cfg.peak_lr, betas=(0.9, 0.98), eps=1e-6, weight_decay=cfg.weight_decay
        )
        self.schedule = TriStageSchedule(
            cfg.peak_lr, cfg.warmup_updates, cfg.hold_updates, cfg.decay_updates, cfg.final_lr_scale
        )
        self.num_updates = 0
        self.temperature = cfg.max_temp
        self.mask_gen = torch.Generator(device=self.device)
        self.mask_gen.manual_seed(cfg.seed)
        self.code_usage = torch.zeros(cfg.num_groups, cfg.num_vars, device=device)
        self.feature_bank = torch.zeros(0, cfg.conv_channels, device=device)
        self.history: dict[str, list[torch.Tensor]] = {"loss": []}
        self.last_perplexity = 0.0
        self.step_times: list[float] = []
        self.graph = None
        self.static_wav = torch.zeros(cfg.batch_size, cfg.num_samples, device=device)
        self.static_loss = torch.zeros((), device=device)

    @property
    def current_lr(self) -> float:
        return self.schedule.value(self.num_updates)

    def train_step(self, wav: torch.Tensor, temperature: float) -> torch.Tensor:
        cfg = self.cfg
        started = time.perf_counter()  # expect: GS502
        self.optimizer.zero_grad(set_to_none=False)
        feats, penalty = self.model.extract(wav)
        if self.num_updates < cfg.warmup_updates:  # expect: GS301
            feats = feats * cfg.feature_grad_mult + feats.detach() * (1.0 - cfg.feature_grad_mult)
        B, T, _ = feats.shape
        starts = torch.rand(B, T, generator=self.mask_gen, device=feats.device) < cfg.mask_prob / cfg.mask_length  # expect: GS601
        mask = spans_from_starts(starts, cfg.mask_length)
        if not mask.any():  # expect: GS201
            mask[:, 0] = True
        ctx = self.model.contextualize(feats, mask)
        quantized, avg_probs = self.model.quantizer(feats, temperature)
        x = masked_targets(ctx, mask)
        y = masked_targets(quantized, mask)
        negs = sample_negatives(y, cfg.num_negatives)
        loss = contrastive_loss(x, y, negs, cfg.logit_temp)
        div, perplexity = diversity_loss(avg_probs, cfg.num_vars)
        sample_size = int(mask.sum())  # expect: GS105
        penalty_scale = torch.tensor(cfg.feature_penalty * sample_size, device=feats.device)  # expect: GS402
        loss = loss + cfg.diversity_weight * div * sample_size + penalty_scale * penalty
        self.code_usage = self.code_usage + avg_probs.detach()  # expect: GS401
        self.feature_bank = torch.cat([self.feature_bank, feats.detach().mean(1)])  # expect: GS404
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
        for group in self.optimizer.param_groups:
            group["lr"] = self.current_lr  # expect: GS301
        self.optimizer.step()  # expect: GS701
        self.num_updates += 1  # expect: GS302
        self.last_perplexity = perplexity.item()  # expect: GS101
        self.history["loss"].append(loss.detach() / sample_size)  # expect: GS503
        if self.num_updates % cfg.log_interval == 0:
            logger.info("update %d lr %.2e", self.num_updates, self.current_lr)  # expect: GS501
        self.step_times.append(time.perf_counter() - started)  # expect: GS502, GS503
        if grad_norm > 1e3:  # expect: GS201
            logger.warning("large grad norm")  # expect: GS501
        if cfg.debug_dump:
            with open(os.path.join(self.workdir, "codes.json"), "w") as fh:  # expect: GS504
                json.dump({"perplexity": perplexity.tolist()}, fh)  # expect: GS102, GS504
        self.static_loss.copy_(loss.detach())
        return loss.detach()

    def capture(self) -> None:
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.train_step(self.static_wav, self.temperature)

    def fit(self, batches: list[torch.Tensor]) -> list[float]:
        losses = []
        if self.device.type == "cuda":
            self.capture()
        for wav in batches:
            self.temperature = gumbel_temperature(self.temperature, self.cfg.temp_decay, self.cfg.min_temp)
            if self.graph is not None:
                self.static_wav.copy_(wav)
                self.graph.replay()
                losses.append(float(self.static_loss))
            else:
                losses.append(float(self.train_step(wav, self.temperature)))
        return losses
