"""Entry point for the corpus runner: a few accumulated pre-training iterations of a tiny GPT, on CPU."""

from __future__ import annotations

import os
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import TrainConfig  # noqa: E402
from fabric_utils import LocalFabric  # noqa: E402
from train import Trainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = TrainConfig()
    g = torch.Generator().manual_seed(seed)
    n_tokens = steps * cfg.gradient_accumulation_steps * cfg.batch_size * cfg.model.block_size + 1
    tokens = torch.randint(0, cfg.model.vocab_size, (n_tokens,), generator=g)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pin_memory without an accelerator, GradScaler on CPU
        trainer = Trainer(cfg, LocalFabric("cpu"), tmp)
        losses = trainer.fit(tokens, max_iters=steps)
        saved = float(os.path.exists(os.path.join(tmp, "ckpt.pt")))
    logged = trainer.fabric.logged
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "iter_num": float(trainer.module.iter_num),
        "last_lr": float(logged["train/lr"][-1]),
        "grad_norm": float(logged["train/grad_norm"][-1]),
        "skipped": float(trainer.module.skipped_steps),
        "ckpt_saved": saved,
        "wte_norm": float(trainer.module.model.wte.weight.detach().norm()),
    }


if __name__ == "__main__":
    print(run())
