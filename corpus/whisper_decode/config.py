"""Model dimensions and decoding options for the toy Whisper-style recogniser."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ModelDims:
    n_mels: int = 8
    n_audio_ctx: int = 12
    n_vocab: int = 40
    n_text_ctx: int = 16
    d_model: int = 32
    n_head: int = 4


@dataclass
class DecodingOptions:
    batch_size: int = 2
    sample_len: int = 6
    temperatures: tuple[float, ...] = (0.0, 0.4, 0.8)
    logprob_threshold: float = -0.5
    no_speech_threshold: float = 0.6
    suppress_tokens: tuple[int, ...] = (3, 5, 7)
    suppress_blank: bool = True
    max_initial_timestamp_index: int | None = 4
    verbose: bool = False
    seed: int = 0
    special: dict = field(default_factory=lambda: {"sot": 1, "eot": 2, "no_speech": 4, "blank": 0, "timestamp_begin": 30})
