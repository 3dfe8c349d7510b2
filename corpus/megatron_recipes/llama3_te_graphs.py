"""Llama-3 8B pretraining with Transformer Engine scoped CUDA graphs (a correct recipe)."""

from megatron.bridge.recipes.llama import llama3_8b_pretrain_config


def pretrain_config(seq_length: int = 8192):
    cfg = llama3_8b_pretrain_config()
    cfg.model.seq_length = seq_length
    cfg.train.micro_batch_size = 1
    cfg.train.global_batch_size = 128

    # Dense model: graph attention and MLP layers with TE's make_graphed_callables.
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["attn", "mlp"]
    cfg.model.cuda_graph_warmup_steps = 3
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True

    # TE-scoped graphs pair with selective recompute.
    cfg.model.recompute_granularity = "selective"
    cfg.model.recompute_modules = ["core_attn"]
    cfg.optimizer.optimizer_cpu_offload = False
    return cfg


def moe_config():
    """Dropless MoE: attention, router and preprocessing are graphed; experts stay eager."""
    cfg = llama3_8b_pretrain_config()
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["attn", "moe_router", "moe_preprocess"]
    cfg.model.cuda_graph_warmup_steps = 3
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True
    return cfg
