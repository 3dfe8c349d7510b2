"""Model providers and Megatron-Core configs built with constructor keywords."""

from dataclasses import dataclass

from megatron.bridge.models import GPTModelProvider
from megatron.core.transformer import TransformerConfig


def small_gpt_provider():
    return GPTModelProvider(
        num_layers=12,
        hidden_size=768,
        num_attention_heads=12,
        seq_length=2048,
        enable_cuda_graph=True,  # expect: GS801
        cpu_offloading=True,  # expect: GS807
    )


def mcore_config():
    # Megatron-Core's own dataclass: the loss NaN check lives in the training config, not here.
    return TransformerConfig(
        num_layers=4,
        hidden_size=256,
        num_attention_heads=4,
        cuda_graph_impl="local",
        cuda_graph_scope=["full_iteration"],
        use_te_rng_tracker=True,
    )


@dataclass
class GraphedLlamaProvider(GPTModelProvider):
    """A provider subclass whose field defaults turn TE graphs on, with variable sequence lengths."""

    cuda_graph_impl: str = "transformer_engine"
    cuda_graph_scope: tuple = ("attn",)
    use_te_rng_tracker: bool = True
    variable_seq_lengths: bool = True  # expect: GS810


OVERRIDES = {
    "cuda_graph_impl": "local",
    "cuda_graph_scope": ["attn"],
    "use_te_rng_tracker": True,
    "cuda_graph_warmup_steps": -1,  # expect: GS811
}
