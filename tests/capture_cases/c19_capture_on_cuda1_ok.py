# family: device
# report: pytorch/pytorch#87894
# expect: -
# codes: GS904
# check: static
"""The twin of c19: the capture runs with cuda:1 as the current device."""
import torch


def capture(model: torch.nn.Module):
    model = model.to("cuda:1")
    static_x = torch.randn(8, 16, device="cuda:1")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.device("cuda:1"):
        with torch.cuda.graph(g):
            static_out = model(static_x)
    return g, static_out
