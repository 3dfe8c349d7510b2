from __future__ import annotations

import torch

from model import Transformer


@torch.no_grad()
def greedy_decode(model: Transformer, src: torch.Tensor, bos: int, eos: int, max_len: int) -> torch.Tensor:
    memory = model.encoder(src)
    src_pad = src == model.cfg.pad
    ys = torch.full((src.shape[0], max_len + 1), eos, dtype=torch.long, device=src.device)
    ys[:, 0] = bos
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    pos = 0
    while not finished.all():  # expect: GS201
        logits = model.decoder(ys[:, : pos + 1], memory, src_pad)[:, -1]
        next_tok = logits.argmax(-1).masked_fill(finished, eos)
        ys[:, pos + 1] = next_tok
        finished |= next_tok == eos
        pos += 1
        if pos >= max_len:
            break
    return ys[:, 1:]
