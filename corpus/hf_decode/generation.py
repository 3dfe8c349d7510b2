"""Generation utilities in the Hugging Face style: logits processors, stopping criteria, a token
streamer and a `Generator` whose one-token `_decode_step` is wrapped with
torch.compile(mode="reduce-overhead") on a GPU (CUDA graphs) and run eagerly on CPU."""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F

from cache import StaticCache
from modeling import TinyForCausalLM

log = logging.getLogger("hf_decode")


class TemperatureLogitsWarper:
    def __init__(self, temperature: float):
        self.temperature = temperature

    def __call__(self, input_ids, scores):
        return scores / self.temperature


class RepetitionPenaltyLogitsProcessor:
    def __init__(self, penalty: float):
        self.penalty = penalty

    def __call__(self, input_ids, scores):
        score = torch.gather(scores, 1, input_ids)
        score = torch.where(score < 0, score * self.penalty, score / self.penalty)
        return scores.scatter(1, input_ids, score)


class TopPLogitsWarper:
    def __init__(self, top_p: float, min_tokens_to_keep: int = 1):
        self.top_p, self.min_tokens_to_keep = top_p, min_tokens_to_keep

    def __call__(self, input_ids, scores):
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
        sorted_indices_to_remove[..., -self.min_tokens_to_keep :] = False
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        return scores.masked_fill(indices_to_remove, -float("inf"))


class EosTokenCriteria:
    def __init__(self, eos_token_id: int):
        self.eos_token_id = eos_token_id

    def __call__(self, input_ids, scores) -> torch.Tensor:
        is_done = input_ids[:, -1] == self.eos_token_id
        if is_done.all():  # expect: GS201
            log.info("every sequence emitted eos at length %d", input_ids.shape[-1])  # expect: GS501
        return is_done


class MaxLengthCriteria:
    def __init__(self, max_length: int):
        self.max_length = max_length

    def __call__(self, input_ids, scores) -> torch.Tensor:
        is_done = input_ids.shape[-1] >= self.max_length
        return torch.full((input_ids.shape[0],), is_done, device=input_ids.device, dtype=torch.bool)


class TokenStreamer:
    """Receives token ids as they are generated (row 0 only), like transformers' TextStreamer."""

    def __init__(self, echo: bool = True):
        self.echo = echo
        self.token_cache: list[int] = []
        self.next_tokens_are_prompt = True

    def put(self, value: torch.Tensor) -> None:
        if value.dim() > 1:
            value = value[0]
        if self.next_tokens_are_prompt:
            self.next_tokens_are_prompt = False
            return
        self.token_cache.extend(value.tolist())  # expect: GS503
        if self.echo:
            print(f"<{self.token_cache[-1]}>", end=" ", flush=True)  # expect: GS501


class Generator:
    def __init__(self, model: TinyForCausalLM, batch_size: int, max_length: int, device: torch.device,
                 do_sample: bool = True, temperature: float = 0.7, top_p: float = 0.9, echo: bool = False):
        cfg = model.config
        self.model = model.eval()
        self.device = device
        self.do_sample = do_sample
        self.pad_token_id = cfg.pad_token_id
        self.cache = StaticCache(cfg.num_hidden_layers, batch_size, cfg.num_attention_heads,
                                 cfg.hidden_size // cfg.num_attention_heads, max_length, device)
        self.attention_mask = torch.zeros(batch_size, max_length, dtype=torch.long, device=device)
        self.unfinished = torch.ones(batch_size, dtype=torch.long, device=device)
        self.this_peer_finished = False
        self.logits_processor = [RepetitionPenaltyLogitsProcessor(1.2), TemperatureLogitsWarper(temperature),
                                 TopPLogitsWarper(top_p)]
        self.stopping_criteria = [MaxLengthCriteria(max_length), EosTokenCriteria(cfg.eos_token_id)]
        self.streamer = TokenStreamer(echo=echo)
        if device.type == "cuda":
            self.decode_step = torch.compile(self._decode_step, mode="reduce-overhead")
        else:
            self.decode_step = self._decode_step

    def _next_tokens(self, input_ids, logits):
        scores = logits[:, -1, :].float()
        for processor in self.logits_processor:
            scores = processor(input_ids, scores)
        if self.do_sample:
            next_tokens = torch.multinomial(F.softmax(scores, dim=-1), num_samples=1).squeeze(1)
        else:
            next_tokens = torch.argmax(scores, dim=-1)
        return scores, next_tokens * self.unfinished + self.pad_token_id * (1 - self.unfinished)

    @torch.no_grad()
    def _decode_step(self, input_ids: torch.Tensor, cache_position: torch.Tensor) -> torch.Tensor:
        self.attention_mask.index_fill_(1, cache_position, 1)
        logits, past_key_values = self.model(input_ids[:, -1:], attention_mask=self.attention_mask,
                                             past_key_values=self.cache, cache_position=cache_position)
        scores, next_tokens = self._next_tokens(input_ids, logits)
        input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)  # expect: GS404
        self.streamer.put(next_tokens[:1].cpu())  # expect: GS103, GS503
        for criteria in self.stopping_criteria:
            self.unfinished &= ~criteria(input_ids, scores)
        if self.unfinished.max() == 0:  # expect: GS201
            self.this_peer_finished = True
        cache_position.add_(1)
        return input_ids

    @torch.no_grad()
    def generate(self, input_ids: torch.Tensor, max_new_tokens: int) -> list[list[int]]:
        input_ids = input_ids.to(self.device)
        B, T = input_ids.shape
        self.cache.reset()
        self.attention_mask.zero_()
        self.attention_mask[:, :T] = 1
        self.unfinished.fill_(1)
        self.this_peer_finished = False
        self.streamer.put(input_ids.cpu())
        logits, _ = self.model(input_ids, attention_mask=self.attention_mask, past_key_values=self.cache)  # prefill
        _, next_tokens = self._next_tokens(input_ids, logits)
        input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
        cache_position = torch.tensor([T], device=self.device)
        for _ in range(max_new_tokens - 1):
            input_ids = self.decode_step(input_ids, cache_position)
            if self.this_peer_finished or input_ids.shape[1] >= self.cache.max_cache_len:
                break
        return input_ids.tolist()
