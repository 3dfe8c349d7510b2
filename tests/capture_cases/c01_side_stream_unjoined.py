# family: streams
# report: deepseek-ai/DeepEP#62
# expect: GS902
# check: static runtime
# error: AcceleratorError: CUDA error: capturing stream has unjoined work
# at: with torch.cuda.graph(g):
# frames: torch/cuda/graphs.py::graph.__exit__
"""A dispatch helper forks work onto a side stream inside the captured step (the side stream waits
on the capturing one) and returns without joining it back: capture_end fails with
cudaErrorStreamCaptureUnjoined (904)."""
import torch

side = torch.cuda.Stream()


def dispatch(x: torch.Tensor) -> torch.Tensor:  # graphsafe: region
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = x * 2
    return y


def capture(g: torch.cuda.CUDAGraph, x: torch.Tensor) -> torch.Tensor:
    with torch.cuda.graph(g):
        return dispatch(x)
