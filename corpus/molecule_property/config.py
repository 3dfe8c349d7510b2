"""Configuration for the molecular graph transformer."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class MolConfig:
    num_atom_types: int = 10
    num_bond_types: int = 4
    hidden: int = 32
    heads: int = 4
    layers: int = 2
    num_targets: int = 3
    batch_size: int = 6
    max_atoms: int = 12
    lr: float = 3e-4
    emb_lr: float = 1e-2
    ema_decay: float = 0.99
    stats_momentum: float = 0.9
    bond_dropout: float = 0.1
    amp: bool = False
    checkpoint_layers: bool = True
    save_ema: bool = False
    target_names: list[str] = field(default_factory=lambda: ["homo", "lumo", "gap"])
    seed: int = 0
