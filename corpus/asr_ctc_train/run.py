import random

import torch

from config import ASRConfig
from trainer import CTCTrainer


def make_batch(cfg: ASRConfig, g: torch.Generator, device: torch.device):
    feat_lens = torch.randint(cfg.max_frames // 2, cfg.max_frames + 1, (cfg.batch,), generator=g)
    feats = torch.randn(cfg.batch, cfg.max_frames, cfg.n_feats, generator=g)
    target_lens = [int(v) for v in torch.randint(3, cfg.max_label + 1, (cfg.batch,), generator=g)]
    targets = torch.randint(1, cfg.vocab, (cfg.batch, cfg.max_label), generator=g)
    label_seqs = [targets[b, :n].to(device) for b, n in enumerate(target_lens)]
    return [feats.to(device), feat_lens.to(device), targets.to(device), target_lens, label_seqs]


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = ASRConfig(seed=seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(seed)
    trainer = CTCTrainer(cfg, device)
    trainer.aug_gen.manual_seed(seed)
    batches = [make_batch(cfg, g, device) for _ in range(steps)]
    if device.type == "cuda":
        trainer.capture(batches[0], cfg.lr)
    return trainer.fit(batches)


if __name__ == "__main__":
    print(run())
