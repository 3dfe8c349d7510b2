# family: streams
# report: deepseek-ai/DeepEP#62
# expect: -
# codes: GS902
# check: static
"""The twin of c01: the side stream waits for the capturing stream first and joins it after."""
import torch

side = torch.cuda.Stream()


def dispatch(x: torch.Tensor) -> torch.Tensor:  # graphsafe: region
    current = torch.cuda.current_stream()
    side.wait_stream(current)
    with torch.cuda.stream(side):
        y = x * 2
    current.wait_stream(side)
    return y
