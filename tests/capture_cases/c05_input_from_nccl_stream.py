# family: collectives
# report: pytorch/pytorch#196919
# expect: GS903
# check: runtime
# error: AcceleratorError: CUDA error: operation failed due to a previous error during capture | AcceleratorError: CUDA error: dependency created on uncaptured work in another stream
# at: work.wait()
# frames: torch/distributed/distributed_c10d.py::wait
"""The step's input is all-gathered asynchronously before capture and its handle is waited
inside the capture: the capturing stream would wait on NCCL work that is not part of the graph
(cudaErrorStreamCaptureIsolation, 905)."""
import torch
import torch.distributed as dist


def capture(g: torch.cuda.CUDAGraph, full: torch.Tensor, shard: torch.Tensor):
    work = dist.all_gather_into_tensor(full, shard, async_op=True)
    with torch.cuda.graph(g):
        out = full * 2
        work.wait()
    return out
