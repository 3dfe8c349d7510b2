from dataclasses import dataclass, field


@dataclass
class TTSConfig:
    n_mels: int = 16
    dim: int = 32
    text_len: int = 12
    vocab: int = 40
    codec_vocab: int = 64
    max_frames: int = 24
    batch: int = 2
    stop_threshold: float = 0.5
    temperature: float = 0.9
    temperature_decay: float = 0.95
    top_k: int = 8
    banned_tokens: list = field(default_factory=lambda: [0, 1])
    seed: int = 0
    trace_timing: bool = False
