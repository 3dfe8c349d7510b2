"""Entry point for the corpus runner: a few epochs of NER training on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import NERConfig  # noqa: E402
from data import batches, make_corpus  # noqa: E402
from trainer import NERTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = NERConfig(seed=seed, epochs=steps)
    device = torch.device("cpu")
    trainer = NERTrainer(cfg, device)
    train = make_corpus(cfg, 18, seed)
    valid = make_corpus(cfg, 8, seed + 1)
    rng = random.Random(seed)
    val_f1 = 0.0
    epochs_run = 0
    for epoch in range(cfg.epochs):
        trainer.span_f1.reset()
        for words, chars, tags, lengths in batches(train, cfg, shuffle=True, rng=rng):
            trainer.step_fn(words.to(device), chars.to(device), tags.to(device), lengths)
        val_f1 = trainer.evaluate(batches(valid, cfg, shuffle=False, rng=rng))
        epochs_run += 1
        if trainer.end_epoch(epoch, val_f1):
            break
    losses = torch.stack(trainer.train_losses)
    return {
        "last_loss": float(losses[-1]),
        "mean_loss": float(losses.mean()),
        "train_span_f1": float(trainer.span_f1.f1),
        "val_span_f1": float(val_f1),
        "best_f1": float(trainer.best_f1),
        "epochs_run": float(epochs_run),
        "crf_lr": float(trainer.crf_lr),
        "transition_sum": float(trainer.model.crf.transitions.detach().sum()),
    }


if __name__ == "__main__":
    print(run())
