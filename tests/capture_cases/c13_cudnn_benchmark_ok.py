# family: lazy-init
# report: mstar-project/mstar#55
# expect: -
# codes: GS711
# check: static
"""The twin of c13: warm-up on a side stream with the capture's shapes first."""
import torch


def capture(model: torch.nn.Module, static_x: torch.Tensor):
    torch.backends.cudnn.benchmark = True
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model(static_x)
    return g, out
