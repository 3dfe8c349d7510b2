"""A tiny decoder-only LM written like a Hugging Face modeling file (config, attention that reads
and writes `past_key_values`, a causal mask built from `cache_position`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from cache import StaticCache


@dataclass
class TinyConfig:
    vocab_size: int = 48
    hidden_size: int = 32
    num_attention_heads: int = 2
    num_hidden_layers: int = 2
    max_position_embeddings: int = 32
    pad_token_id: int = 0
    eos_token_id: int = 1
    use_cache: bool = True


class Attention(nn.Module):
    def __init__(self, config: TinyConfig, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.qkv_proj = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(self, hidden_states, attn_mask, past_key_values: StaticCache | None, cache_position):
        bsz, q_len, _ = hidden_states.size()
        q, k, v = self.qkv_proj(hidden_states).chunk(3, dim=-1)
        q, k, v = (t.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        if past_key_values is not None:
            k, v = past_key_values.update(k, v, self.layer_idx, {"cache_position": cache_position})
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        return self.o_proj(out.transpose(1, 2).reshape(bsz, q_len, -1))


class DecoderLayer(nn.Module):
    def __init__(self, config: TinyConfig, layer_idx: int):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(config.hidden_size)
        self.self_attn = Attention(config, layer_idx)
        self.post_attention_layernorm = nn.LayerNorm(config.hidden_size)
        self.mlp = nn.Sequential(nn.Linear(config.hidden_size, 4 * config.hidden_size), nn.SiLU(),
                                 nn.Linear(4 * config.hidden_size, config.hidden_size))

    def forward(self, hidden_states, attn_mask, past_key_values, cache_position):
        h = hidden_states + self.self_attn(self.input_layernorm(hidden_states), attn_mask, past_key_values, cache_position)
        return h + self.mlp(self.post_attention_layernorm(h))


class TinyForCausalLM(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.embed_positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(config, i) for i in range(config.num_hidden_layers))
        self.norm = nn.LayerNorm(config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def _update_causal_mask(self, attention_mask, cache_position, key_len: int):
        causal = torch.arange(key_len, device=cache_position.device)[None, :] <= cache_position[:, None]
        mask = causal[None, None, :, :]
        if attention_mask is not None and torch.all(attention_mask == 1):  # expect: GS201
            attention_mask = None  # nothing padded: the causal mask is enough
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :key_len].bool()
        return mask

    def forward(self, input_ids, attention_mask=None, past_key_values: StaticCache | None = None,
                cache_position=None, use_cache: bool | None = None):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        if cache_position is None:
            past_seen = past_key_values.get_seq_length() if past_key_values is not None else 0
            cache_position = torch.arange(past_seen, past_seen + input_ids.shape[1], device=input_ids.device)
        key_len = past_key_values.max_cache_len if past_key_values is not None else input_ids.shape[1]
        attn_mask = self._update_causal_mask(attention_mask, cache_position, key_len)
        hidden = self.embed_tokens(input_ids) + self.embed_positions(cache_position)[None]
        for layer in self.layers:
            hidden = layer(hidden, attn_mask, past_key_values, cache_position)
        logits = self.lm_head(self.norm(hidden))
        past = past_key_values.to_legacy_cache() if (use_cache and past_key_values is not None) else None
        return logits, past
