"""Model and generation settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LlamaConfig:
    vocab_size: int = 48
    dim: int = 32
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    ffn_hidden: int = 64
    max_seq_len: int = 48
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    embed_scale: float = 1.0


@dataclass
class GenerationConfig:
    max_new_tokens: int = 8
    temperature: float = 0.9
    temperature_decay: float = 0.95
    min_temperature: float = 0.3
    top_p: float = 0.9
    repetition_penalty: float = 1.2
    stop_strings: tuple[str, ...] = ("\n\n", "###")
    seed: int = 0
    verbose: bool = False
    show_progress: bool = False
