"""GPT pretraining captured as one local full-iteration graph (a correct recipe)."""

import os

from megatron.bridge.recipes.gpt import gpt_126m_pretrain_config

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
os.environ["NCCL_GRAPH_REGISTER"] = "0"


def pretrain_config():
    cfg = gpt_126m_pretrain_config()
    cfg.model.cuda_graph_impl = "local"
    cfg.model.cuda_graph_scope = ["full_iteration"]
    cfg.model.cuda_graph_warmup_steps = 3
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True
    cfg.rerun_state_machine.check_for_nan_in_loss = False
    cfg.ddp.check_for_nan_in_grad = False
    # Full recompute is allowed with a full-iteration graph.
    cfg.model.recompute_granularity = "full"
    cfg.model.recompute_method = "uniform"
    cfg.model.recompute_num_layers = 1
    return cfg
