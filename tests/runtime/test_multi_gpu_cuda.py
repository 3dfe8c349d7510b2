"""Issue 23 on real GPUs: a DDP step captured after a side-stream warm-up replays like eager; an
all-reduce inside the captured step either captures or is classified GS901; a side stream forked
and not joined is classified GS902; a capture on cuda:0 of work on cuda:1 records nothing (GS904),
while graphsafe's own trial capture picks the tensors' device.

Two-process tests use torch.multiprocessing (spawn) with NCCL on a free local port; each rank
writes its result as JSON and the parent asserts on both. Each test is bounded (60 s)."""

from __future__ import annotations

import json
import os
import socket
import time
import warnings
from pathlib import Path

import pytest
import torch

from graphsafe.runtime import trial_capture
from graphsafe.runtime.classify import classify_exception

pytestmark = pytest.mark.cuda

WORLD = 2
TIMEOUT_S = 60
two_gpus = pytest.mark.skipif(torch.cuda.device_count() < WORLD,
                              reason=f"needs {WORLD} CUDA GPUs, found {torch.cuda.device_count()}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_ranks(worker, out: Path) -> list[dict]:
    """Run `worker(rank, port, out)` on WORLD spawned processes; their JSON results, by rank."""
    import torch.multiprocessing as mp

    context = mp.start_processes(worker, args=(_free_port(), str(out)), nprocs=WORLD, join=False,
                                 start_method="spawn")
    deadline = time.monotonic() + TIMEOUT_S
    while not context.join(timeout=1.0):  # raises ProcessRaisedException if a rank failed
        if time.monotonic() > deadline:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
            pytest.fail(f"{worker.__name__} did not finish in {TIMEOUT_S} s")
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(WORLD)]


def _init(rank: int, port: int) -> torch.device:
    import torch.distributed as dist

    # PyTorch's notes on capturing DDP: async error handling off before the group exists (GS705)
    os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD,
                            device_id=device)
    return device


def _finish(rank: int, out: str, result: dict) -> None:
    import torch.distributed as dist

    Path(out, f"rank{rank}.json").write_text(json.dumps(result))
    dist.barrier()
    dist.destroy_process_group()


def _report_summary(report) -> dict:
    return {"status": report.status, "match": report.match, "text": report.to_text(),
            "code": report.failure.code if report.failure is not None else None}


# --- workers (top level: spawn imports them by name) ----------------------------------------------


def _ddp_worker(rank: int, port: int, out: str) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    device = _init(rank, port)
    torch.manual_seed(0)  # the same initial weights on both ranks
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(device)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # DDP built on a side stream (GS704)
        ddp = DDP(model, device_ids=[rank])
    torch.cuda.current_stream().wait_stream(side)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)  # different data per rank: the gradients are really all-reduced
    x, y = torch.randn(8, 16, device=device), torch.randn(8, 4, device=device)

    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        return loss

    report = trial_capture(train_step, (x, y), state=(ddp, opt), timing=False, replays=3)  # 11 warm-up steps
    _finish(rank, out, {**_report_summary(report), "warmup": report.warmup})


def _all_reduce_worker(rank: int, port: int, out: str) -> None:
    import torch.distributed as dist

    device = _init(rank, port)
    x = torch.full((64,), float(rank + 1), device=device)

    def step(x):
        dist.all_reduce(x)
        return x * 2

    report = trial_capture(step, (x,), warmup=3, timing=False, replays=2)
    _finish(rank, out, _report_summary(report))


# --- tests ------------------------------------------------------------------------------------------


@two_gpus
def test_ddp_step_captured_after_side_stream_warmup_replays_like_eager(tmp_path):
    for rank, result in enumerate(_run_ranks(_ddp_worker, tmp_path)):
        assert result["warmup"] == 11, result["text"]
        assert result["status"] == "ok" and result["match"] is True, f"rank {rank}:\n{result['text']}"


@two_gpus
def test_all_reduce_inside_the_step_captures_or_is_classified_as_a_collective(tmp_path):
    for rank, result in enumerate(_run_ranks(_all_reduce_worker, tmp_path)):
        captured = result["status"] == "ok" and result["match"] is True
        assert captured or result["code"] == "GS901", f"rank {rank}:\n{result['text']}"


def test_a_side_stream_forked_and_not_joined_is_classified_as_unjoined():
    side = torch.cuda.Stream()
    x = torch.ones(256, device="cuda")

    def step(x):
        side.wait_stream(torch.cuda.current_stream())  # the side stream joins the capture...
        with torch.cuda.stream(side):
            y = x * 2
        return y  # ...and is never joined back

    report = trial_capture(step, (x,), warmup=2, timing=False)
    assert report.status == "failed", report.to_text()
    assert report.failure.code == "GS902" and report.failure.cuda_error == 904, report.to_text()
    assert report.process_usable is not False


@two_gpus
def test_capture_on_cuda0_of_work_on_cuda1_records_nothing_while_trial_capture_picks_cuda1():
    torch.cuda.set_device(0)
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 16).to("cuda:1")
    static_x = torch.randn(4, 16, device="cuda:1")
    with torch.no_grad():
        model(static_x)  # warm-up on cuda:1
        torch.cuda.synchronize(1)
        graph = torch.cuda.CUDAGraph()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with torch.cuda.graph(graph):  # current device: cuda:0
                    static_out = model(static_x)
            except Exception as error:  # if it fails instead of recording nothing, it must be named
                failure = classify_exception(error, phase="capture")
                assert failure.code == "GS904", failure
                static_out = None
        if static_out is not None:
            static_x.copy_(torch.randn(4, 16, device="cuda:1"))
            graph.replay()
            torch.cuda.synchronize(1)
            stale = not torch.allclose(static_out, model(static_x))
            empty = any("empty" in str(w.message) for w in caught)
            assert stale or empty, "the capture on cuda:0 recorded the work of cuda:1"
    torch.cuda.set_device(0)

    report = trial_capture(lambda x: model(x), (static_x,), state=model, warmup=2, timing=False)
    assert report.status == "ok" and report.match is True, report.to_text()
