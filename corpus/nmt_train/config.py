from __future__ import annotations

from dataclasses import dataclass


@dataclass
class NMTConfig:
    seed: int = 0
    src_vocab: int = 40
    tgt_vocab: int = 40
    d_model: int = 32
    heads: int = 4
    ffn: int = 64
    enc_layers: int = 2
    dec_layers: int = 1
    max_tokens: int = 48
    max_len: int = 10
    pad: int = 0
    bos: int = 1
    eos: int = 2
    unk: int = 3
    word_dropout: float = 0.1
    peak_lr: float = 5e-4
    warmup_updates: int = 4
    label_smoothing: float = 0.1
    smoothing_floor: float = 0.02
    clip_norm: float = 1.0
    freeze_embed_updates: int = 1
    loss_window: int = 8
    bleu_interval: int = 2
    bleu_max_len: int = 8
    activation_checkpointing: bool = True
    profile_memory: bool = False
    num_checkpoints_to_average: int = 2
