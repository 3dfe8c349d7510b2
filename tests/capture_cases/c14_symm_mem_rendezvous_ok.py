# family: lazy-init
# report: pytorch/pytorch#198140
# expect: -
# codes: GS712
# check: static
"""The twin of c14: the buffer is allocated and rendezvoused once at set-up."""
import torch
import torch.distributed._symmetric_memory as symm_mem


class Exchange:
    def __init__(self, n: int, group_name: str) -> None:
        self.buf = symm_mem.empty(n, device="cuda")
        self.handle = symm_mem.rendezvous(self.buf, group_name)

    def step(self, x: torch.Tensor) -> torch.Tensor:  # graphsafe: region
        self.buf.copy_(x.flatten())
        return self.buf * 2
