"""Token-by-token generation with a compiled (CUDA-graphed) one-token decode step."""

from __future__ import annotations

import logging
import time
from collections import defaultdict

import torch

from config import GenerationConfig
from model import Llama
from sampling import apply_repetition_penalty, next_token_probs
from tokenizer import CharTokenizer

log = logging.getLogger("llama.generate")


class LlamaGenerator:
    def __init__(self, model: Llama, tokenizer: CharTokenizer, cfg: GenerationConfig, device: torch.device):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.cfg = cfg
        self.device = device
        self.gen = torch.Generator(device=device)
        self.generated = torch.zeros(1, 0, dtype=torch.long, device=device)
        self.last_token = torch.full((1, 1), -1, dtype=torch.long, device=device)
        self.stats: dict[str, list] = defaultdict(list)
        self.repeats = 0
        self.pbar = None
        if device.type == "cuda":
            self._step = torch.compile(self.decode_step, mode="reduce-overhead")
        else:
            self._step = self.decode_step

    @torch.no_grad()
    def decode_step(self, token: torch.Tensor, pos: int, temperature: float) -> torch.Tensor:
        log.debug("decode pos=%d", pos)  # expect: GS501
        logits = self.model(token, pos)[:, -1].float()
        if torch.isnan(logits).any():  # expect: GS201
            raise FloatingPointError("non-finite logits in decode step")
        if self.cfg.repetition_penalty != 1.0:
            logits = apply_repetition_penalty(logits, self.generated, self.cfg.repetition_penalty)
        probs = next_token_probs(logits, temperature, self.cfg.top_p)
        next_token = torch.multinomial(probs, 1, generator=self.gen)  # expect: GS601
        self.generated = torch.cat([self.generated, next_token], dim=1)  # expect: GS404
        entropy = -(probs * probs.clamp_min(1e-9).log()).sum(-1)
        self.stats["entropy"].append(entropy.mean())  # expect: GS503
        self.stats["confident"].append(logits[probs > 0.5].numel())  # expect: GS108, GS503
        self.stats["eos"].append(bool(next_token[0, 0] == self.tokenizer.eos_id))  # expect: GS105, GS503
        if torch.equal(next_token, self.last_token):  # expect: GS109
            self.repeats += 1  # expect: GS302
        self.last_token.copy_(next_token)
        self.stats["wall"].append(time.monotonic())  # expect: GS502, GS503
        if self.pbar is not None:
            self.pbar.update(1)  # expect: GS505
        if self.cfg.verbose:
            print(f"pos={pos} token={next_token}")  # expect: GS104, GS501
        return next_token

    def reset(self) -> None:
        self.model.reset_cache()
        self.gen.manual_seed(self.cfg.seed)
        self.generated = torch.zeros(1, 0, dtype=torch.long, device=self.device)
        self.last_token.fill_(-1)
        self.repeats = 0
        self.stats.clear()

    @torch.no_grad()
    def prefill(self, prompt_ids: list[int]) -> torch.Tensor:
        ids = torch.tensor(prompt_ids, dtype=torch.long, device=self.device)
        for pos in range(len(prompt_ids) - 1):
            self.model(ids[pos : pos + 1][None], pos)
        return ids[-1:][None]

    def generate(self, prompt: str) -> str:
        self.reset()
        prompt_ids = self.tokenizer.encode(prompt)
        token = self.prefill(prompt_ids)
        text = ""
        if self.cfg.show_progress:
            from tqdm import tqdm

            self.pbar = tqdm(total=self.cfg.max_new_tokens)
        for step in range(self.cfg.max_new_tokens):
            pos = len(prompt_ids) - 1 + step
            temperature = max(self.cfg.min_temperature, self.cfg.temperature * self.cfg.temperature_decay**step)
            token = self._step(token, pos, temperature).clone()
            text += self.tokenizer.decode(token[0].tolist())
            if int(token[0, 0]) == self.tokenizer.eos_id or any(s in text for s in self.cfg.stop_strings):
                break
        return text
