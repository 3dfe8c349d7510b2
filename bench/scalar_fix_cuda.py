"""On a CUDA GPU: do the keep-the-tensor (GS101/GS105) and scalar-buffer (GS301) rewrites keep
values bitwise, and does the GS301 rewrite make a captured graph follow the per-step value?

    python bench/scalar_fix_cuda.py        # exit 1 when a case the fixes claim equal differs

Claimed equal (float32/float64 operands, `+ - *`) must match bitwise; the cases the Fix safety
sections call different (bfloat16/float16 operands on CUDA, `/`) are measured and listed.

Measured 2026-11-21 on one H100 (torch 2.11.0+cu130): 0 mismatches where the fixes claim
equality; 45 documented differences (every bfloat16/float16 operand case, and `/`, which CUDA
computes as `x * (1 / v)` for a Python number: the reason `/` is not rewritten); the graph
captured with the buffer matched eager for 5 of 5 values, the original graph was stale on 4
of 4 changed values.

CPU equality is proven by tests/test_rewriter_keep_tensor.py and
tests/test_rewriter_scalar_buffer.py; CUDA kernels treat a Python number (a CPU scalar) and a
0-dim device tensor differently, so this script checks the device side.
"""

from __future__ import annotations

import math
import sys

import torch

OPS = {"mul": lambda a, b: a * b, "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "div": lambda a, b: a / b}
CLAIMED_OPS = ("mul", "add", "sub")  # what the rewriters offer
CLAIMED_KEEP = (torch.float32, torch.float64)
CLAIMED_BUFFER = (torch.float32,)
SPECIAL = [0.0, -0.0, 0.1, 1e-8, 65504.0, 1e30, float("nan"), float("inf"), -float("inf"), 3.3]


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.isnan(), b.isnan()) and torch.equal(
        torch.nan_to_num(a, 7.0, 8.0, 9.0), torch.nan_to_num(b, 7.0, 8.0, 9.0))


def keep_tensor_checks(device: str) -> list[str]:
    """`x OP t.item()` vs `x OP t.reshape(())` with t on the device."""
    bad = []
    gen = torch.Generator(device="cpu").manual_seed(0)
    for x_dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
        for s_dtype in (torch.float32, torch.float64, torch.bfloat16, torch.int64):
            for name, op in OPS.items():
                for trial in range(200):
                    x = (torch.randn(64, generator=gen) * 100).to(x_dtype).to(device)
                    x[:len(SPECIAL)] = torch.tensor(SPECIAL, dtype=torch.float64).to(x_dtype)
                    raw = SPECIAL[trial] if trial < len(SPECIAL) else float(torch.randn((), generator=gen) * 10 ** (trial % 7))
                    if not s_dtype.is_floating_point:
                        raw = int(max(min(raw, 1e6), -1e6)) if not math.isnan(raw) else 3
                    t = torch.tensor(raw, dtype=torch.float64).to(s_dtype).to(device)
                    if not same(op(x, t.item()), op(x, t.reshape(()))):
                        claimed = name in CLAIMED_OPS and x_dtype in CLAIMED_KEEP
                        bad.append(f"{'MISMATCH' if claimed else 'documented'} keep-tensor {name} x={x_dtype} "
                                   f"t={s_dtype} value={t.item()}")
                        break
    return bad


def scalar_buffer_checks(device: str) -> list[str]:
    """`x OP number` vs `x OP buffer.fill_(number)` with the default-dtype (float32) buffer."""
    bad = []
    gen = torch.Generator(device="cpu").manual_seed(1)
    buffer = torch.zeros((), device=device)
    for x_dtype in (torch.float32, torch.bfloat16, torch.float16):
        for name, op in OPS.items():
            for trial in range(200):
                x = (torch.randn(64, generator=gen) * 100).to(x_dtype).to(device)
                x[:len(SPECIAL)] = torch.tensor(SPECIAL, dtype=torch.float64).to(x_dtype)
                value = SPECIAL[trial] if trial < len(SPECIAL) else float(torch.randn((), generator=gen) * 10 ** (trial % 7))
                if not same(op(x, value), op(x, buffer.fill_(value))):
                    claimed = name in CLAIMED_OPS and x_dtype in CLAIMED_BUFFER
                    bad.append(f"{'MISMATCH' if claimed else 'documented'} scalar-buffer {name} x={x_dtype} value={value}")
                    break
    return bad


class Model(torch.nn.Module):
    """The fixed form of a region method with a per-step `scale` (what `graphsafe fix` writes)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.register_buffer("_step_scale", torch.zeros(()), persistent=False)

    def step(self, x: torch.Tensor, scale) -> torch.Tensor:
        return self.lin(x) * scale


def capture_check(device: str) -> list[str]:
    """Capture `step` once with the buffer, replay with new values: replay == eager each time.
    The original (a Python number) replays the capture-time value, which this also shows."""
    torch.manual_seed(0)
    model = Model().to(device)
    static_x = torch.randn(4, 8, device=device)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            model.step(static_x, model._step_scale.fill_(0.5))
            model.step(static_x, 0.5)
    torch.cuda.current_stream().wait_stream(side)
    fixed_graph, original_graph = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.no_grad():
        model._step_scale.fill_(0.5)
        with torch.cuda.graph(fixed_graph):
            fixed_out = model.step(static_x, model._step_scale)
        with torch.cuda.graph(original_graph):
            original_out = model.step(static_x, 0.5)
    bad = []
    stale = 0
    for value in (0.5, 2.0, -3.25, 1e-3, float("inf")):
        with torch.no_grad():
            expected = model.step(static_x, value)
            model._step_scale.fill_(value)  # what each rewritten call does before the region
            fixed_graph.replay()
            original_graph.replay()
        torch.cuda.synchronize()
        if not same(fixed_out, expected):
            bad.append(f"MISMATCH capture: replay with scale={value} differs from eager")
        stale += not same(original_out, expected)
    print(f"capture: original graph stale on {stale} of 4 changed values (expected 4)")
    return bad


def main() -> int:
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    print(torch.__version__, torch.cuda.get_device_name())
    found = keep_tensor_checks("cuda") + scalar_buffer_checks("cuda") + capture_check("cuda")
    for line in sorted(found):
        print(line)
    mismatches = [line for line in found if line.startswith("MISMATCH")]
    print(f"{len(mismatches)} mismatches where the fixes claim equality; "
          f"{len(found) - len(mismatches)} documented differences seen")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
