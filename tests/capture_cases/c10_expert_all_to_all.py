# family: collectives
# report: NVIDIA/Megatron-LM#1598
# expect: GS901
# check: static
"""Expert-parallel token dispatch: the split sizes come from the router's counts on the host and
the all-to-all moves a data-dependent number of tokens per rank."""
import torch
import torch.distributed as dist


def dispatch(tokens: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:  # graphsafe: region
    send = counts.tolist()
    recv = torch.empty_like(tokens)
    dist.all_to_all_single(recv, tokens, output_split_sizes=send, input_split_sizes=send)
    return recv
