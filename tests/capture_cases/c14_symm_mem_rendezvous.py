# family: lazy-init
# report: pytorch/pytorch#198140
# expect: GS712
# check: static runtime
# error: AcceleratorError: CUDA error: operation failed due to a previous error during capture | AcceleratorError: CUDA error: operation not permitted when stream is capturing
# at: handle = symm_mem.rendezvous(buf, group_name)
# frames: torch/distributed/_symmetric_memory/__init__.py::rendezvous
"""A symmetric-memory buffer allocated and rendezvoused inside the captured step."""
import torch
import torch.distributed._symmetric_memory as symm_mem


def step(x: torch.Tensor, group_name: str) -> torch.Tensor:  # graphsafe: region
    buf = symm_mem.empty(x.numel(), dtype=x.dtype, device=x.device)
    handle = symm_mem.rendezvous(buf, group_name)
    buf.copy_(x.flatten())
    handle.barrier()
    return buf
