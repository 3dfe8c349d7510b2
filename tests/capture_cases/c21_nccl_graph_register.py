# family: config
# report: NVIDIA/Megatron-LM#5474
# expect: GS906
# check: static
"""A plain PyTorch script: expandable segments on, NCCL graph registration left at its default,
and an all-reduce captured in the graph."""
import os

import torch
import torch.distributed as dist

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"


def main(x: torch.Tensor):
    dist.init_process_group("nccl")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            dist.all_reduce(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dist.all_reduce(x)
    return g
