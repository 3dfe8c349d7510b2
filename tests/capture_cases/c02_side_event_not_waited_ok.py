# family: streams
# report: NVIDIA/Megatron-LM#6077
# expect: -
# codes: GS902
# check: static
"""The twin of c02: the event recorded on the reduce-scatter stream is waited by the capturing
stream (an event join that GS902 must accept)."""
import torch

rs_stream = torch.cuda.Stream()


def reduce_grads(grad: torch.Tensor) -> torch.Tensor:  # graphsafe: region
    rs_stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(rs_stream):
        shard = grad.view(2, -1).sum(0)
    done = torch.cuda.Event()
    done.record(rs_stream)
    torch.cuda.current_stream().wait_event(done)
    return shard
