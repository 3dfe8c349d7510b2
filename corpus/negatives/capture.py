"""`graphsafe capture` factory for this program: builds its objects the way its own GPU path does
and returns the step that path captures, with the same arguments (bench/bench_corpus_capture.py
runs it on the original and on the `graphsafe fix`ed copy)."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from data import batches, make_dataset  # noqa: E402
from model import Config  # noqa: E402
from train import Trainer  # noqa: E402


def make(device: str = "cuda") -> dict:
    torch.manual_seed(0)
    config = Config()
    trainer = Trainer(config, 8, torch.device(device))
    tokens, labels, _ = next(batches(make_dataset(64, config.vocab_size, config.max_len, config.n_classes, 0), 8,
                                     config.max_len, 0))
    trainer.static_tokens.copy_(tokens)
    trainer.static_labels.copy_(labels)
    trainer.model.train()
    return {"step": trainer.train_step, "args": ()}
