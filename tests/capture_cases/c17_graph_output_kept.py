# family: lifetime
# report: vllm-project/vllm#9724
# expect: GS407
# check: static
"""Outputs of a replayed graph collected in a list: every element is the same static tensor."""
import torch


def run(g: torch.cuda.CUDAGraph, static_x: torch.Tensor, model: torch.nn.Module, batches):
    with torch.cuda.graph(g):
        static_out = model(static_x)
    outputs = []
    for batch in batches:
        static_x.copy_(batch)
        g.replay()
        outputs.append(static_out)
    return outputs
