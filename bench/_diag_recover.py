"""After a failed trial capture (.item() inside), which CUDA operations still work?"""
import torch
from graphsafe.runtime import trial_capture


def probe(tag):
    for name, fn in [("sync", torch.cuda.synchronize), ("zeros", lambda: torch.zeros(4, device="cuda").add_(1)),
                     ("matmul", lambda: torch.ones(8, device="cuda") @ torch.ones(8, device="cuda")),
                     ("rand", lambda: torch.rand(8, device="cuda")), ("randn", lambda: torch.randn(1, device="cuda"))]:
        try:
            fn()
            torch.cuda.synchronize()
            print(tag, name, "ok")
        except Exception as error:
            print(tag, name, "FAIL", type(error).__name__, str(error).replace("\n", " | ")[:400])


def step(x):
    y = x * 2
    return y * y.sum().item()


x = torch.randn(8, 8, device="cuda")
probe("before")
report = trial_capture(step, (x,), timing=False)
print("status", report.status, "usable", report.process_usable, report.failure.code if report.failure else None)
probe("after")
