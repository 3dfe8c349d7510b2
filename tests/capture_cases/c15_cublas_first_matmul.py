# family: lazy-init
# report: pytorch/pytorch#99397
# expect: GS711
# check: runtime
# error: AcceleratorError: CUDA error: operation failed due to a previous error during capture | RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`
# at: torch.matmul(x, x)
# frames:
"""The first matmul of the process runs inside the capture: cuBLAS creates its handle there."""
import torch


def capture(x: torch.Tensor):
    with torch.cuda.graph(torch.cuda.CUDAGraph()):
        torch.matmul(x, x)
