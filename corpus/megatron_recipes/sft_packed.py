"""Packed-sequence fine-tuning with TE-scoped graphs."""

from megatron.bridge.data.datasets.packed_sequence import PackedSequenceSpecs
from megatron.bridge.recipes.llama import llama3_8b_finetune_config


def packed_sft_config():
    cfg = llama3_8b_finetune_config(packed_sequence=True)  # expect: GS809
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["attn"]
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True
    return cfg


def padded_sft_config():
    cfg = llama3_8b_finetune_config(packed_sequence=False)
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["attn"]
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True
    return cfg


def specs_sft_config():
    cfg = llama3_8b_finetune_config()
    cfg.dataset.packed_sequence_specs = PackedSequenceSpecs(packed_sequence_size=4096)  # expect: GS809
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True
    return cfg
