from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Seq2SeqConfig:
    src_vocab: int = 48
    tgt_vocab: int = 48
    d_model: int = 32
    n_heads: int = 4
    max_src_len: int = 10
    max_tgt_len: int = 12
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2


@dataclass
class GenerationConfig:
    do_sample: bool = False
    temperatures: tuple[float, ...] = (1.0, 1.5)
    top_k: int = 8
    length_penalty: float = 0.6
    seed: int | None = None
    return_step_logits: bool = False
    bad_words_ids: list[list[int]] | None = None
    use_graph: bool = True
