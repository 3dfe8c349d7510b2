"""Logit filters applied at every decoding step (blank/suppressed tokens, timestamp rules)."""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F


class SuppressBlank:
    def __init__(self, blank: int, eot: int, sample_begin: int):
        self.blank = blank
        self.eot = eot
        self.sample_begin = sample_begin

    def apply(self, logits: torch.Tensor, tokens: torch.Tensor, position: int) -> None:
        if position == self.sample_begin:  # expect: GS301
            logits[:, self.blank] = -float("inf")
            logits[:, self.eot] = -float("inf")


class SuppressTokens:
    def __init__(self, suppress: tuple[int, ...]):
        self.suppress = list(suppress)

    def apply(self, logits: torch.Tensor, tokens: torch.Tensor, position: int) -> None:
        ids = torch.tensor(self.suppress, dtype=torch.long, device=logits.device)  # expect: GS402
        logits.index_fill_(-1, ids, -float("inf"))


class ApplyTimestampRules:
    def __init__(self, timestamp_begin: int, eot: int, sample_begin: int, max_initial_timestamp_index: int | None):
        self.timestamp_begin = timestamp_begin
        self.eot = eot
        self.sample_begin = sample_begin
        self.max_initial_timestamp_index = max_initial_timestamp_index

    def apply(self, logits: torch.Tensor, tokens: torch.Tensor, position: int) -> None:
        ts = self.timestamp_begin
        for k in range(tokens.shape[0]):
            seq = tokens[k, self.sample_begin:position].tolist()  # expect: GS102, GS301
            last_was_timestamp = len(seq) >= 1 and seq[-1] >= ts
            penultimate_was_timestamp = len(seq) < 2 or seq[-2] >= ts
            if last_was_timestamp:
                if penultimate_was_timestamp:
                    logits[k, ts:] = -float("inf")
                else:
                    logits[k, : self.eot] = -float("inf")
        seen = tokens[:, self.sample_begin:]
        timestamps = seen[seen.ge(ts)]  # expect: GS108
        if len(timestamps) > 0:  # expect: GS201
            logits[:, ts] = -float("inf")
        if self.max_initial_timestamp_index is None:
            warnings.warn("no limit on the initial timestamp")  # expect: GS501
        else:
            logits[:, ts + self.max_initial_timestamp_index + 1:] = -float("inf")
        logprobs = F.log_softmax(logits.float(), dim=-1)
        for k in range(tokens.shape[0]):
            timestamp_logprob = logprobs[k, ts:].logsumexp(dim=-1)
            max_text_token_logprob = logprobs[k, :ts].max()
            if timestamp_logprob > max_text_token_logprob:  # expect: GS201
                logits[k, :ts] = -float("inf")
