# family: lazy-init
# report: mstar-project/mstar#55
# expect: GS711
# check: static
"""cuDNN benchmark mode switched on right before capturing a convolution model that never ran:
cuDNN's algorithm search and workspace allocation happen inside the capture."""
import torch


def capture(model: torch.nn.Module, static_x: torch.Tensor):
    torch.backends.cudnn.benchmark = True
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model(static_x)
    return g, out
