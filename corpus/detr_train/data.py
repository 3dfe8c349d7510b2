import torch


def synthetic_batches(cfg, n: int, gen: torch.Generator):
    batches = []
    for _ in range(n):
        images = torch.rand(cfg.batch_size, 3, cfg.image_size, cfg.image_size, generator=gen)
        targets = []
        for _ in range(cfg.batch_size):
            k = int(torch.randint(1, cfg.max_targets + 1, (1,), generator=gen))
            centers = torch.rand(k, 2, generator=gen) * 0.6 + 0.2
            sizes = torch.rand(k, 2, generator=gen) * 0.2 + 0.05
            targets.append({"labels": torch.randint(0, cfg.num_classes, (k,), generator=gen),
                            "boxes": torch.cat([centers, sizes], dim=-1)})
        batches.append((images, targets))
    return batches
