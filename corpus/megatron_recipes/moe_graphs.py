"""MoE recipes: scope mistakes, a typo, and a missing RNG tracker."""

import os

from megatron.bridge.recipes.deepseek import deepseek_v3_pretrain_config
from megatron.bridge.recipes.qwen import qwen3_30b_a3b_pretrain_config

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"  # expect: GS806


def deepseek_config():
    cfg = deepseek_v3_pretrain_config()
    cfg.model.cuda_graph_impl = "transformer_engine"  # expect: GS801
    cfg.model.cuda_graph_scope = ["attn", "moe", "moe_router"]  # expect: GS804
    cfg.model.cuda_graph_warmup_steps = 3
    cfg.model.moe_token_dispatcher_type = "alltoall"
    return cfg


def qwen3_config():
    cfg = qwen3_30b_a3b_pretrain_config()
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["attn", "moe_preprocess"]  # expect: GS804
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True
    cfg.model.recompute_granularity = "full"  # expect: GS808
    cfg.model.recompute_num_layers = 2
    return cfg


def qwen3_typo_config():
    cfg = qwen3_30b_a3b_pretrain_config()
    cfg.model.cuda_graph_impl = "transformer-engine"  # expect: GS805
    cfg.model.cuda_graph_scope = ["attn", "moe_routr"]  # expect: GS805
    cfg.model.use_te_rng_tracker = True
    return cfg
