from __future__ import annotations

import logging

import torch

from joint import Joiner, Predictor

logger = logging.getLogger("asr.decode")


def frame_entropy(enc: torch.Tensor) -> torch.Tensor:
    p = enc.softmax(-1)
    return -(p * p.clamp_min(1e-9).log()).sum(-1)


class GreedyTransducer:
    def __init__(self, predictor: Predictor, joiner: Joiner, blank_id: int, max_symbols: int):
        self.predictor = predictor
        self.joiner = joiner
        self.blank_id = blank_id
        self.max_symbols = max_symbols
        self.total_symbols = 0
        self.alignment: list[int] = []

    @torch.no_grad()
    def decode(self, enc: torch.Tensor, pred_state: torch.Tensor,
               last_tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, t_len, _ = enc.shape
        hyp = torch.full((b, t_len, self.max_symbols), self.blank_id, dtype=torch.long, device=enc.device)
        g, pred_state = self.predictor(last_tokens, pred_state)
        for t in range(t_len):
            f = enc[:, t]
            symbols = 0
            not_blank = torch.ones(b, dtype=torch.bool, device=enc.device)
            while symbols < self.max_symbols and not_blank.any():  # expect: GS201
                k = self.joiner(f, g).argmax(-1)
                not_blank = k != self.blank_id
                emitted = k[not_blank]  # expect: GS108
                self.total_symbols += emitted.numel()  # expect: GS302
                hyp[:, t, symbols] = torch.where(not_blank, k, hyp[:, t, symbols])
                g_new, state_new = self.predictor(k, pred_state)
                g = torch.where(not_blank[:, None], g_new, g)
                pred_state = torch.where(not_blank[:, None], state_new, pred_state)
                last_tokens = torch.where(not_blank, k, last_tokens)
                symbols += 1
        frame_idx = torch.nonzero((hyp[0] != self.blank_id).any(-1)).squeeze(-1)  # expect: GS107
        self.alignment.extend(frame_idx.tolist())  # expect: GS102, GS503
        blank_frac = float((hyp == self.blank_id).float().mean())  # expect: GS105
        logger.info("chunk decoded, blank fraction %.2f", blank_frac)  # expect: GS501
        return hyp, pred_state, last_tokens
