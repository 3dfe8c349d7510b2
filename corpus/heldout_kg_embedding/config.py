"""Configuration of RotatE training with self-adversarial negative sampling."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class KGConfig:
    n_entities: int = 40
    n_relations: int = 4
    n_triples: int = 200
    dim: int = 16
    gamma: float = 6.0
    epsilon: float = 2.0
    num_negatives: int = 8
    batch_size: int = 16
    lr: float = 0.05
    adv_temperature: float = 1.0
    temp_warmup: int = 4
    regularization: float = 1e-4
    reg_every: int = 2
    hard_margin: float = 0.1
    max_modulus: float = 10.0
    symmetric_relations: tuple[int, ...] = (0, 2)
    hits_at: tuple[int, ...] = (1, 3, 10)
    fixed_negatives: bool = False
    profile: bool = False
    dump_negatives: bool = False
    out_dir: str = "runs/rotate"
    seed: int = 0
