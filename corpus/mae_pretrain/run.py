import contextlib
import io

import torch

from config import MAEConfig
from trainer import MAETrainer


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = MAEConfig(seed=seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(seed)
    batches = [torch.rand(cfg.batch, cfg.chans, cfg.img, cfg.img, generator=g).to(device) for _ in range(steps)]
    trainer = MAETrainer(cfg, device)
    import random
    random.seed(seed)
    with contextlib.redirect_stdout(io.StringIO()):
        if device.type == "cuda":
            trainer.capture(batches[0], trainer.lr_at(0), trainer.mask_ratio_at(0))
        return trainer.fit(batches)


if __name__ == "__main__":
    print(run())
