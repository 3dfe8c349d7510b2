"""Overhead of `graphsafe.runtime.trace` on a small transformer training step.

A tiny GPT (embedding, 2 blocks of attention + MLP, LM head, cross-entropy, backward, AdamW
step) is timed eager and traced; medians over repeats, the ratio, the memory the tracer's
records take (tracemalloc, allocations from graphsafe's runtime files) and the peak RSS.

    python bench/bench_trace_overhead.py                 # CPU
    python bench/bench_trace_overhead.py --device cuda   # GPU

Prints a markdown row for bench/RESULTS.md, with the exact command.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import statistics
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from graphsafe.runtime import trace  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(dim, dim=-1)
        q, k, v = (t.view(batch, seq, self.heads, dim // self.heads).transpose(1, 2) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, seq, dim))
        return x + self.mlp(self.norm2(x))


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab: int = 256, dim: int = 64, heads: int = 4, layers: int = 2, seq: int = 32):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, dim)
        self.positions = torch.nn.Embedding(seq, dim)
        self.blocks = torch.nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def train_step(model, opt, ids, targets):
    logits = model(ids)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=False)
    return loss


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_eager(step, args, steps: int, device: str) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        step(*args)
    sync(device)
    return (time.perf_counter() - start) / steps


class _NoOpModes:
    """Both torch modes doing nothing: the share of the overhead that is torch's own."""

    def __enter__(self):
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        class Function(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        class Dispatch(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        self._modes = [Function(), Dispatch()]
        for mode in self._modes:
            mode.__enter__()

    def __exit__(self, *exc):
        for mode in reversed(self._modes):
            mode.__exit__(*exc)


def time_bare_modes(step, args, steps: int, device: str) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        with _NoOpModes():
            step(*args)
    sync(device)
    return (time.perf_counter() - start) / steps


def time_traced(step, args, steps: int, device: str) -> tuple[float, object]:
    start = time.perf_counter()
    report = trace(step, *args, steps=steps)
    sync(device)
    return (time.perf_counter() - start) / steps, report


def tracer_record_bytes(step, args, steps: int) -> int:
    """Bytes still allocated from graphsafe's runtime files while the report is alive."""
    runtime_dir = os.path.join("graphsafe", "runtime")
    tracemalloc.start(25)
    before = tracemalloc.take_snapshot()
    report = trace(step, *args, steps=steps)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    stats = after.filter_traces([tracemalloc.Filter(True, f"*{runtime_dir}*")]).compare_to(
        before.filter_traces([tracemalloc.Filter(True, f"*{runtime_dir}*")]), "filename"
    )
    del report
    return sum(s.size_diff for s in stats if s.size_diff > 0)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--steps", type=int, default=10, help="steps per repeat")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    device = args.device
    model = TinyGPT().to(device)
    # capturable on CUDA: the step is graph-safe there; on CPU AdamW reads its step counters
    # with .item(), so the traced CPU step also pays for recording those hits.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=device == "cuda")
    ids = torch.randint(0, 256, (args.batch, 32), device=device)
    targets = torch.randint(0, 256, (args.batch, 32), device=device)
    step_args = (model, opt, ids, targets)

    time_eager(train_step, step_args, 3, device)  # warm-up: allocator, kernels, optimizer state
    time_traced(train_step, step_args, 3, device)  # warm-up: torch's mode machinery imports
    rss_eager_start = peak_rss_mb()
    eager, bare, traced = [], [], []
    for _ in range(args.repeats):  # interleaved: drift in machine speed hits all alike
        eager.append(time_eager(train_step, step_args, args.steps, device))
        bare.append(time_bare_modes(train_step, step_args, args.steps, device))
        seconds, report = time_traced(train_step, step_args, args.steps, device)
        traced.append(seconds)
    record_bytes = tracer_record_bytes(train_step, step_args, args.steps)

    eager_ms, traced_ms = statistics.median(eager) * 1e3, statistics.median(traced) * 1e3
    bare_ms = statistics.median(bare) * 1e3
    hits = sum(f.hits for f in report.findings)
    print(f"eager       {eager_ms:8.2f} ms/step (median of {args.repeats} x {args.steps} steps)")
    print(f"no-op modes {bare_ms:8.2f} ms/step ({bare_ms / eager_ms:.2f}x: torch's own cost of the two modes)")
    print(f"traced      {traced_ms:8.2f} ms/step")
    print(f"ratio       {traced_ms / eager_ms:8.2f}x")
    print(f"findings {len(report.findings)} ({hits} hits in {report.steps} steps): "
          + ", ".join(sorted({f.code for f in report.findings})) if report.findings else "findings 0")
    print(f"tracer records {record_bytes / 1024:.1f} KiB (tracemalloc, graphsafe/runtime allocations, "
          f"{args.steps} steps); peak RSS {peak_rss_mb():.0f} MiB (before timing {rss_eager_start:.0f} MiB)")
    name = torch.cuda.get_device_name() if device == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    print()
    print("| device | torch | eager ms/step | no-op modes ms/step | traced ms/step | ratio | findings (hits) "
          "| tracer records | peak RSS | command |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {name} | {torch.__version__} | {eager_ms:.2f} | {bare_ms:.2f} | {traced_ms:.2f} | {traced_ms / eager_ms:.2f}x | "
          f"{len(report.findings)} ({hits}) | {record_bytes / 1024:.1f} KiB | {peak_rss_mb():.0f} MiB | `{command}` |")


if __name__ == "__main__":
    main()
