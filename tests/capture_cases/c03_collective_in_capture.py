# family: collectives
# report: ROCm/rccl#2022
# expect: GS901
# check: static runtime
# error: AcceleratorError: CUDA error: operation failed due to a previous error during capture | torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3690, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3
# at: dist.all_reduce(x)
# frames: torch/distributed/c10d_logger.py::wrapper torch/distributed/distributed_c10d.py::all_reduce
"""An all-reduce captured on a process group that never ran a collective before capture: NCCL
sets up its communicator on the first call, which is not allowed while the stream captures."""
import torch
import torch.distributed as dist


def step(x: torch.Tensor) -> torch.Tensor:
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dist.all_reduce(x)
    return x
