"""Synthetic part-labelled point clouds with a varying number of points per cloud."""

from __future__ import annotations

import torch


class ToyParts(torch.utils.data.Dataset):
    """Points on a noisy sphere; the part label is the octant pair of the point."""

    def __init__(self, n: int, cfg, seed: int):
        g = torch.Generator().manual_seed(seed)
        self.clouds = []
        for _ in range(n):
            count = int(torch.randint(cfg.min_points, cfg.max_points + 1, (1,), generator=g))
            xyz = torch.randn(count, 3, generator=g)
            xyz = xyz / xyz.norm(dim=1, keepdim=True) * (1.0 + 0.05 * torch.randn(count, 1, generator=g))
            label = (xyz[:, 0] > 0).long() * 2 + (xyz[:, 2] > 0).long()
            self.clouds.append((xyz, label))

    def __len__(self) -> int:
        return len(self.clouds)

    def __getitem__(self, i: int):
        return self.clouds[i]


def pad_collate(batch):
    counts = [xyz.shape[0] for xyz, _ in batch]
    max_n = max(counts)
    points = torch.zeros(len(batch), max_n, 3)
    labels = torch.zeros(len(batch), max_n, dtype=torch.long)
    for i, (xyz, label) in enumerate(batch):
        points[i, : counts[i]] = xyz
        points[i, counts[i] :] = xyz[0]
        labels[i, : counts[i]] = label
    return points, labels, counts


def label_frequencies(dataset: ToyParts, num_classes: int) -> list[float]:
    hist = torch.zeros(num_classes)
    for _, label in dataset.clouds:
        hist += torch.bincount(label, minlength=num_classes).float()
    return (hist / hist.sum()).tolist()
