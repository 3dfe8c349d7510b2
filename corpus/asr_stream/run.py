"""Entry point for the corpus runner: streaming greedy RNN-T decoding of a few random chunks, on CPU."""

from __future__ import annotations

import logging
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import ASRConfig  # noqa: E402
from streaming import StreamingRecognizer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    logging.getLogger("asr.decode").setLevel(logging.WARNING)
    cfg = ASRConfig()
    rec = StreamingRecognizer(cfg, torch.device("cpu"))
    gen = torch.Generator().manual_seed(seed)
    chunks = [(torch.randn(cfg.batch_size, cfg.chunk_frames, cfg.feat_dim, generator=gen),
               torch.full((cfg.batch_size,), cfg.chunk_frames, dtype=torch.long)) for _ in range(steps)]
    refs = [torch.randint(1, cfg.vocab_size, (6,), generator=gen).tolist() for _ in range(cfg.batch_size)]
    hyps = rec.stream(chunks, refs)
    return {
        "wer": float(rec.stats.wer),
        "hyp_len": float(sum(len(h) for h in hyps)),
        "total_symbols": float(rec.decoder.total_symbols),
        "frame_offset": float(rec.encoder.frame_offset),
        "hidden_norm": float(rec.encoder.hidden.norm()),
        "cache_len": float(rec.cache_len),
        "alignment": float(len(rec.decoder.alignment)),
    }


if __name__ == "__main__":
    print(run())
