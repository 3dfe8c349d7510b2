# family: config
# report: NVIDIA/Megatron-LM#5474
# expect: -
# codes: GS906
# check: static
"""The twin of c21: NCCL graph registration is off."""
import os

import torch
import torch.distributed as dist

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
os.environ["NCCL_GRAPH_REGISTER"] = "0"


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
