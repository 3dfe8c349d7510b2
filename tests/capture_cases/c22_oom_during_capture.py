# family: memory
# report: none cited
# expect: out-of-memory
# check: runtime
# error: AcceleratorError: CUDA error: operation failed due to a previous error during capture | torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.12 GiB memory in use.
# at: logits = model(static_x)
# frames: torch/nn/modules/module.py::Module._call_impl
"""Several graphs captured each into its own pool until the device runs out of memory during a
capture (memory pressure: the cause is the pools, not the step)."""
import torch


def capture_all(model: torch.nn.Module, inputs: list[torch.Tensor]):
    graphs = {}
    for static_x in inputs:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            logits = model(static_x)
        graphs[static_x.shape[0]] = g
    return graphs, logits
