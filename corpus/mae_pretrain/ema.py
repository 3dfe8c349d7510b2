import copy

import torch


class ModelEMA:
    def __init__(self, model: torch.nn.Module, base: float):
        self.shadow = copy.deepcopy(model)
        for p in self.shadow.parameters():
            p.requires_grad_(False)
        self.base = base
        self.updates = 0

    @property
    def decay(self) -> float:
        return min(self.base, (1 + self.updates) / (10 + self.updates))

    def update(self, model: torch.nn.Module) -> None:
        self.updates += 1  # expect: GS302
        d = self.decay
        with torch.no_grad():
            for e, p in zip(self.shadow.parameters(), model.parameters()):
                e.lerp_(p, 1.0 - d)  # expect: GS301
