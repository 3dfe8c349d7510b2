"""Entry point for the corpus runner: a few LoRA micro-steps on packed random documents, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import FinetuneConfig  # noqa: E402
from data import micro_batches, pack_documents  # noqa: E402
from trainer import LoRATrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = FinetuneConfig(seed=seed)
    device = torch.device("cpu")
    trainer = LoRATrainer(cfg, device)
    gen = torch.Generator().manual_seed(seed + 11)
    rows = pack_documents(steps * cfg.micro_batch * cfg.accum_steps, 16, cfg.model.vocab_size, gen)
    out = trainer.fit(micro_batches(rows, cfg.micro_batch))
    return {
        "last_loss": float(out[0]),
        "last_acc": float(out[1]),
        "micro_steps": float(trainer.micro_step),
        "tokens_seen": float(trainer.tokens_seen),
        "trace_sum": float(trainer.token_trace.sum()),
        "lora_B_sum": float(sum(a.lora_B.sum() for a in trainer.adapters)),
        "head_sum": float(trainer.model.lm_head.weight.sum()),
        "pages": float(len(trainer.opt.pages)),
        "sample_sum": float(sum(sum(s) for s in trainer.samples)),
    }


if __name__ == "__main__":
    print(run())
