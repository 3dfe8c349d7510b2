import torch


def make_pairs(cfg, n_batches: int, gen: torch.Generator) -> list[dict]:
    out = []
    for _ in range(n_batches):
        b, t = cfg.batch_size, cfg.seq_len
        chosen = torch.randint(0, cfg.vocab, (b, t), generator=gen)
        rejected = torch.randint(0, cfg.vocab, (b, t), generator=gen)
        c_len = torch.randint(4, t + 1, (b,), generator=gen)
        r_len = torch.randint(4, t + 1, (b,), generator=gen)
        pos = torch.arange(t)
        strength = torch.randint(0, 3, (b,), generator=gen).float()
        out.append({
            "chosen": chosen, "rejected": rejected,
            "c_mask": (pos[None] < c_len[:, None]).float(),
            "r_mask": (pos[None] < r_len[:, None]).float(),
            "strength": strength,
        })
    return out
