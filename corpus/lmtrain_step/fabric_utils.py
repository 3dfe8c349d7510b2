"""A tiny in-process stand-in for Lightning Fabric's logging and device plumbing."""

from __future__ import annotations

from collections import defaultdict

import torch


class LocalFabric:
    def __init__(self, accelerator: str = "cpu", precision: str = "bf16-mixed"):
        self.device = torch.device("cuda" if accelerator == "cuda" else "cpu")
        self.precision = precision
        self.world_size = 1
        self.logged: dict[str, list] = defaultdict(list)

    def log(self, name: str, value, step: int | None = None) -> None:
        self.logged[name].append(value)  # expect: GS503

    def log_dict(self, metrics: dict, step: int | None = None) -> None:
        for k, v in metrics.items():
            self.log(k, v, step)

    def to_device(self, obj):
        return obj.to(self.device, non_blocking=True)


class TrainModule(torch.nn.Module):
    """The slice of the LightningModule API this project uses."""

    def __init__(self) -> None:
        super().__init__()
        self.fabric: LocalFabric | None = None

    def log(self, name: str, value, prog_bar: bool = False) -> None:
        if self.fabric is not None:
            self.fabric.log(name, value)  # expect: GS501
