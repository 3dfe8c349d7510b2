"""A full-iteration recipe with three documented mistakes."""

from megatron.bridge.recipes.gpt import gpt_126m_pretrain_config


def pretrain_config():
    cfg = gpt_126m_pretrain_config()
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["full_iteration"]  # expect: GS802
    cfg.model.cuda_graph_warmup_steps = 3
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True
    return cfg


def pretrain_local_config():
    cfg = gpt_126m_pretrain_config()
    cfg.model.cuda_graph_impl = "local"
    cfg.model.cuda_graph_scope = ["full_iteration"]  # expect: GS803
    cfg.model.cuda_graph_warmup_steps = 0  # expect: GS811
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True
    cfg.ddp.check_for_nan_in_grad = True  # expect: GS803
    return cfg
