"""A static KV cache in the Hugging Face style: preallocated per-layer key/value tensors written at
`cache_position` with `index_copy_`, convertible to the legacy `past_key_values` tuples."""

from __future__ import annotations

import torch


class StaticCache:
    def __init__(self, num_layers: int, batch_size: int, num_heads: int, head_dim: int, max_cache_len: int,
                 device=None, dtype=torch.float32):
        self.max_cache_len = max_cache_len
        shape = (batch_size, num_heads, max_cache_len, head_dim)
        self.key_cache = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.value_cache = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self._seen_tokens = 0

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int,
               cache_kwargs: dict | None = None):
        if layer_idx == 0:
            self._seen_tokens += key_states.shape[-2]  # expect: GS302
        cache_position = cache_kwargs.get("cache_position") if cache_kwargs else None
        k_out, v_out = self.key_cache[layer_idx], self.value_cache[layer_idx]
        if cache_position is None:
            k_out.copy_(key_states)
            v_out.copy_(value_states)
        else:
            k_out.index_copy_(2, cache_position, key_states)
            v_out.index_copy_(2, cache_position, value_states)
        return k_out, v_out

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self._seen_tokens

    def reset(self) -> None:
        self._seen_tokens = 0
        for k, v in zip(self.key_cache, self.value_cache):
            k.zero_()
            v.zero_()

    def to_legacy_cache(self) -> tuple[tuple[torch.Tensor, torch.Tensor], ...]:
        return tuple((self.key_cache[i], self.value_cache[i]) for i in range(len(self.key_cache)))
