from __future__ import annotations

import torch


class GPUFeatureCache:
    def __init__(self, host_feats: torch.Tensor, capacity: int, device: torch.device):
        self.host_feats = host_feats
        self.device = device
        hot = torch.arange(capacity)
        self.slot_of = torch.full((host_feats.shape[0],), -1, dtype=torch.long, device=device)
        self.slot_of[hot.to(device)] = torch.arange(capacity, device=device)
        self.rows = host_feats[hot].to(device)
        self.hits = 0
        self.lookups = 0
        self.hit_history = torch.zeros(0, device=device)

    @property
    def hit_rate(self) -> float:
        return self.hits / max(self.lookups, 1)

    def gather(self, ids: torch.Tensor) -> torch.Tensor:
        slots = self.slot_of[ids]
        hit = slots >= 0
        out = self.rows[slots.clamp_min(0)] * hit[:, None]
        self.hits += int(hit.sum())  # expect: GS105
        self.lookups += ids.numel()  # expect: GS302
        if not hit.all():  # expect: GS201
            miss_ids = ids[~hit]  # expect: GS108
            fetched = self.host_feats[miss_ids.cpu()].to(ids.device)  # expect: GS103, GS402
            out = out.index_put((torch.arange(ids.numel(), device=ids.device)[~hit],), fetched)  # expect: GS108
        rate = hit.float().mean()
        self.hit_history = torch.cat([self.hit_history, rate[None]])  # expect: GS404
        return out
