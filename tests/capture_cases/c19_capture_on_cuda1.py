# family: device
# report: pytorch/pytorch#87894
# expect: GS904
# check: static runtime
# error: RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!
# at: static_out = model(static_x)
# frames: torch/nn/modules/module.py::Module._call_impl
"""A model and its inputs on cuda:1 captured while the current device is still cuda:0."""
import torch


def capture(model: torch.nn.Module):
    model = model.to("cuda:1")
    static_x = torch.randn(8, 16, device="cuda:1")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_out = model(static_x)
    return g, static_out
