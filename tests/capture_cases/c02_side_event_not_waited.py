# family: streams
# report: NVIDIA/Megatron-LM#6077
# expect: GS902
# check: static
"""A gradient reduce-scatter overlapped on its own stream: an event is recorded on that stream
after the work, but the capturing stream never waits on it, so the fork is never joined."""
import torch

rs_stream = torch.cuda.Stream()


def reduce_grads(grad: torch.Tensor) -> torch.Tensor:  # graphsafe: region
    rs_stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(rs_stream):
        shard = grad.view(2, -1).sum(0)
    done = torch.cuda.Event()
    done.record(rs_stream)
    return shard
