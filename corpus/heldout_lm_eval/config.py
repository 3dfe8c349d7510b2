"""Configuration of the evaluation harness."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LMConfig:
    vocab: int = 48
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    max_len: int = 32


@dataclass
class EvalConfig:
    lm: LMConfig = field(default_factory=LMConfig)
    tasks: tuple = ("arith", "copy", "parity")
    n_choices: int = 4
    batch_questions: int = 2
    pad_id: int = 0
    length_normalize: bool = True
    logit_cap: float = 30.0
    calib_temp: float = 1.5
    temp_decay: float = 0.9
    min_temp: float = 1.0
    decide_margin: float = 0.6
    tie_noise: float = 1e-4
    deterministic_ties: bool = True
    free_cache: bool = False
    verbose: bool = False
    compile: bool = False
    seed: int = 0
