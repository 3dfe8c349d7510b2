"""Launching Megatron-LM from Python: an argument list, a command string and the environment."""

import os
import subprocess

GPT_ARGS = [
    "--num-layers", "24",
    "--transformer-impl", "local",
    "--cuda-graph-impl", "local",  # expect: GS801
    "--cuda-graph-scope", "full_iteration",
    "--no-check-for-nan-in-loss-and-grad",
    "--recompute-granularity", "full",
]


def launch(nodes: int) -> None:
    env = dict(os.environ)
    env.update({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "NCCL_GRAPH_REGISTER": "0"})
    subprocess.run(["torchrun", f"--nnodes={nodes}", "pretrain_gpt.py", *GPT_ARGS], env=env, check=True)


def launch_moe() -> None:
    cmd = "torchrun pretrain_gpt.py --cuda-graph-impl transformer_engine --cuda-graph-scope attn,moe_router,moe_preprocess --variable-seq-lengths"  # expect: GS810
    subprocess.run(cmd, shell=True, check=True)
