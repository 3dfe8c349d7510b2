"""Entry point for the corpus runner: a few wav2vec 2.0-style pre-training updates, on CPU."""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import Wav2VecConfig  # noqa: E402
from data import synthetic_audio  # noqa: E402
from trainer import PretrainTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = Wav2VecConfig(seed=seed)
    with tempfile.TemporaryDirectory() as workdir:
        trainer = PretrainTrainer(cfg, torch.device("cpu"), workdir)
        batches = synthetic_audio(steps, cfg.batch_size, cfg.num_samples, seed)
        losses = trainer.fit(batches)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "perplexity": float(trainer.last_perplexity),
        "temperature": float(trainer.temperature),
        "num_updates": float(trainer.num_updates),
        "code_usage_sum": float(trainer.code_usage.sum()),
        "param_sum": float(sum(p.detach().sum() for p in trainer.model.parameters())),
    }


if __name__ == "__main__":
    print(run())
