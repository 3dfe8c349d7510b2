# family: lifetime
# report: pytorch/pytorch#170604
# expect: GS407
# check: runtime
# error: RuntimeError: Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run. Stack trace: File "c18_compiled_output_overwritten.py", line 20, in my_model
# at: print(y1)
# frames: torch/_tensor.py::Tensor.__repr__
"""A reduce-overhead compiled function called twice; the first output is read after the second
call reused its memory."""
import torch


@torch.compile(mode="reduce-overhead")
def my_model(x):
    return torch.matmul(x, x)


def main():
    x = torch.randn(10, 10, device="cuda")
    y1 = my_model(x)
    y2 = my_model(x)
    print(y1)
    return y2
