"""Issue 23's static rules: unjoined events (GS902), async collectives (GS903), capture device
(GS904), FSDP resharding (GS905), NCCL graph registration (GS906) and lazy initialisation reached
first during capture (GS710-GS712). Each rule: what it reports, and a look-alike it leaves alone."""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics


def found(source: str, prefix: str) -> list[tuple[str, int]]:
    return sorted((d.code, d.start.line) for d in diagnostics(textwrap.dedent(source)) if d.code.startswith(prefix))


# --- GS902: events ---------------------------------------------------------------------------


def test_an_event_recorded_on_the_side_stream_after_its_block_and_waited_joins_it():
    source = """
    import torch


    def step(x: torch.Tensor, side):  # graphsafe: region
        with torch.cuda.stream(side):
            y = x * 2
        done = side.record_event()
        torch.cuda.current_stream().wait_event(done)
        return y
    """
    assert found(source, "GS902") == []


def test_an_event_recorded_on_the_side_stream_but_never_waited_leaves_it_unjoined():
    source = """
    import torch


    def step(x: torch.Tensor, side):  # graphsafe: region
        with torch.cuda.stream(side):
            y = x * 2
        done = torch.cuda.Event()
        done.record(side)
        return y
    """
    assert found(source, "GS902") == [("GS902", 6)]


def test_an_event_recorded_on_another_stream_does_not_join_the_side_stream():
    source = """
    import torch


    def step(x: torch.Tensor, side, other):  # graphsafe: region
        with torch.cuda.stream(side):
            y = x * 2
        done = torch.cuda.Event()
        done.record(other)
        torch.cuda.current_stream().wait_event(done)
        return y
    """
    assert found(source, "GS902") == [("GS902", 6)]


# --- GS903: async collectives ------------------------------------------------------------------


def test_an_async_handle_waited_after_the_capture_block_is_reported_with_where_it_is_waited():
    source = """
    import torch
    import torch.distributed as dist


    def capture(g, grad: torch.Tensor):
        with torch.cuda.graph(g):
            work = dist.all_reduce(grad, async_op=True)
        work.wait()
    """
    [d] = [d for d in diagnostics(textwrap.dedent(source)) if d.code == "GS903"]
    assert d.start.line == 8 and "only after the capture block" in d.message


def test_an_async_handle_waited_inside_a_nested_block_of_the_region_is_silent():
    source = """
    import torch
    import torch.distributed as dist


    def step(grad: torch.Tensor, sync: bool):  # graphsafe: region
        work = dist.all_reduce(grad, async_op=True)
        if sync:
            work.wait()
        return grad
    """
    assert found(source, "GS903") == []


def test_a_handle_kept_in_a_structure_is_not_judged_but_a_dropped_one_is():
    source = """
    import torch
    import torch.distributed as dist


    def step(self, grad: torch.Tensor):  # graphsafe: region
        self.pending.append(dist.all_reduce(grad, async_op=True))
        dist.broadcast(grad, 0, async_op=True)
        return grad
    """
    assert found(source, "GS903") == [("GS903", 8)]


def test_async_op_false_or_computed_is_not_an_async_collective():
    source = """
    import torch
    import torch.distributed as dist


    def step(grad: torch.Tensor, flag: bool):  # graphsafe: region
        a = dist.all_reduce(grad, async_op=False)
        b = dist.all_reduce(grad, async_op=flag)
        return grad
    """
    assert found(source, "GS903") == []


def test_a_returned_handle_is_reported_only_at_the_region_root():
    source = """
    import torch
    import torch.distributed as dist


    def start(grad: torch.Tensor):
        work = dist.all_reduce(grad, async_op=True)
        return work


    def step(grad: torch.Tensor):  # graphsafe: region
        work = start(grad)
        work.wait()
        return grad
    """
    assert found(source, "GS903") == []


# --- GS904: capture device ----------------------------------------------------------------------


def test_a_capture_next_to_work_on_cuda_1_is_reported_at_the_capture():
    source = """
    import torch


    def capture(model):
        model.cuda(1)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = model(torch.zeros(2, device="cuda:1"))
        return out
    """
    [d] = [d for d in diagnostics(textwrap.dedent(source)) if d.code == "GS904"]
    assert d.start.line == 8 and "`cuda:1`" in d.message


def test_set_device_anywhere_in_the_file_or_a_device_block_guards_the_capture():
    set_device = """
    import torch


    def setup(rank: int):
        torch.cuda.set_device(rank)


    def capture(model):
        model.to("cuda:1")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            return model(torch.zeros(2, device="cuda:1"))
    """
    device_block = """
    import torch


    def capture(model):
        model.to("cuda:1")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.device(1), torch.cuda.graph(g):
            return model(torch.zeros(2, device="cuda:1"))
    """
    assert found(set_device, "GS904") == []
    assert found(device_block, "GS904") == []


def test_cuda_0_and_plain_cuda_are_the_current_device():
    source = """
    import torch


    def capture(model):
        model.to("cuda:0")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            return model(torch.zeros(2, device="cuda"))
    """
    assert found(source, "GS904") == []


# --- GS905 / GS906: distributed set-up --------------------------------------------------------


def test_fsdp_without_capture_in_the_file_is_not_reported():
    source = """
    import torch
    from torch.distributed.fsdp import fully_shard, FullyShardedDataParallel


    def build(model):
        fully_shard(model)
        return FullyShardedDataParallel(model)
    """
    assert found(source, "GS905") == []


def test_fsdp_reshard_computed_at_run_time_is_not_judged():
    source = """
    import torch
    from torch.distributed.fsdp import fully_shard


    def build(model, x, policy: str):
        fully_shard(model, reshard_after_forward=policy == "always")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            model(x)
    """
    assert found(source, "GS905") == []


def test_fsdp1_hybrid_shard_is_reported_and_no_shard_is_not():
    source = """
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy


    def build(a, b, x):
        a = FSDP(a, sharding_strategy=ShardingStrategy.HYBRID_SHARD)
        b = FSDP(b, sharding_strategy=ShardingStrategy.NO_SHARD)
        return torch.cuda.make_graphed_callables(a, (x,))
    """
    assert found(source, "GS905") == [("GS905", 7)]


def test_expandable_segments_without_collectives_or_with_registration_off_is_silent():
    no_collectives = """
    import os
    import torch

    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"


    def capture(g, x):
        with torch.cuda.graph(g):
            return x * 2
    """
    from_env = """
    import os
    import torch
    import torch.distributed as dist

    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    os.environ["NCCL_GRAPH_REGISTER"] = os.environ.get("REG", "0")


    def capture(g, x):
        dist.init_process_group("nccl")
        with torch.cuda.graph(g):
            dist.all_reduce(x)
    """
    assert found(no_collectives, "GS906") == []
    assert found(from_env, "GS906") == []


def test_expandable_segments_among_other_allocator_options_is_reported():
    source = """
    import os
    import torch
    import torch.distributed as dist

    os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:512,expandable_segments:True")


    def capture(g, x):
        dist.init_process_group("nccl")
        with torch.cuda.graph(g):
            dist.all_reduce(x)
    """
    assert found(source, "GS906") == [("GS906", 6)]


# --- GS710-GS712: lazy initialisation -----------------------------------------------------------

KERNEL = """
import torch
import triton


@triton.autotune(configs=[], key=["n"])
@triton.jit
def kernel(x, n):
    pass


@triton.jit
def plain(x, n):
    pass


"""


def test_a_plain_jit_kernel_first_launched_in_capture_is_not_an_autotune_run():
    source = KERNEL + "def capture(g, x, n):\n    with torch.cuda.graph(g):\n        plain[(1,)](x, n)\n"
    assert found(source, "GS710") == []


def test_an_autotuned_kernel_warmed_up_in_another_function_is_still_reported_where_it_is_captured():
    # the warm-up is not visible from the capturing function: reported, as GS709 does for compile
    source = (KERNEL + "def warm(x, n):\n    kernel[(1,)](x, n)\n\n\n"
              "def capture(g, x, n):\n    with torch.cuda.graph(g):\n        kernel[(1,)](x, n)\n")
    assert found(source, "GS710") == [("GS710", 23)]


def test_cudnn_benchmark_set_in_another_function_does_not_judge_the_capture():
    source = """
    import torch


    def setup():
        torch.backends.cudnn.benchmark = True


    def capture(g, model, x):
        with torch.cuda.graph(g):
            return model(x)
    """
    assert found(source, "GS711") == []


def test_cudnn_benchmark_false_is_not_a_benchmark_search():
    source = """
    import torch


    def capture(g, model, x):
        torch.backends.cudnn.benchmark = False
        with torch.cuda.graph(g):
            return model(x)
    """
    assert found(source, "GS711") == []


def test_rendezvous_of_a_buffer_from_elsewhere_is_silent_and_empty_in_a_region_is_reported():
    source = """
    import torch
    import torch.distributed._symmetric_memory as symm_mem


    def step(self, x: torch.Tensor):  # graphsafe: region
        h = symm_mem.rendezvous(self.buf, "world")
        tmp = symm_mem.empty(4, device="cuda")
        return x
    """
    assert found(source, "GS712") == [("GS712", 8)]
