from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 8
    stop_token: int = 1
    seed: int | None = None


@dataclass
class EngineConfig:
    vocab_size: int = 64
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    block_size: int = 4
    num_blocks: int = 64
    max_batch: int = 4
    max_blocks_per_seq: int = 8
    eos_id: int = 2
    default_params: SamplingParams = field(default_factory=SamplingParams)


@dataclass
class Request:
    request_id: str
    prompt: list[int]
    params: SamplingParams
    output_ids: list[int] = field(default_factory=list)
    finished: bool = False
