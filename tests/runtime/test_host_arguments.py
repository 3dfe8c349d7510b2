"""CPU tensor arguments that the graphed step moves onto the device itself (runtime/host_arguments.py):
the `.to(<device>)` becomes a buffer graphed() fills before each replay; host work on them is refused.
On CPU, capture is simulated (`capturing=`) and the meta device stands for the GPU."""
import pytest
import torch

from graphsafe.runtime.host_arguments import CpuArgumentOnHost, HostArgumentsOnDevice, fill

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _mode(x: torch.Tensor, capturing: bool = True) -> HostArgumentsOnDevice:
    return HostArgumentsOnDevice({id(x): "args[0]"}, capturing=lambda: capturing)


def test_a_to_onto_the_device_while_capturing_becomes_a_buffer_of_the_asked_dtype_and_device():
    x = torch.arange(6, dtype=torch.float32).view(2, 3)
    with _mode(x) as mode:
        a = x.to(dtype=torch.float64, device="meta")
        b = x.to("meta")
    assert (a.device.type, a.dtype, tuple(a.shape)) == ("meta", torch.float64, (2, 3))
    assert (b.device.type, b.dtype) == ("meta", torch.float32)
    assert [(arg is x, buf) for arg, buf in mode.moved] == [(True, a), (True, b)]  # one buffer per `.to`


def test_fill_copies_each_cpu_argument_into_its_buffer_before_a_replay():
    x, buffer = torch.tensor([1.0, 2.0]), torch.zeros(2, dtype=torch.float64)
    fill([(x, buffer)])
    x.copy_(torch.tensor([5.0, 7.0]))  # the next call's values, copied into the static argument
    fill([(x, buffer)])
    assert buffer.tolist() == [5.0, 7.0] and buffer.dtype == torch.float64


@pytest.mark.parametrize("use", [lambda x: bool(x[0] > 0), lambda x: x[0].item(), lambda x: x.tolist(),
                                 lambda x: x.add_(1), lambda x: torch.bernoulli(x / 2), lambda x: x + x.to("meta")])
def test_host_work_on_a_cpu_argument_that_reaches_python_or_draws_or_writes_is_refused_with_its_name(use):
    x = torch.ones(3)
    with pytest.raises(CpuArgumentOnHost, match=r"args\[0\]\S* is a CPU tensor and the step uses it on the host"):
        with _mode(x):
            use(x)


def test_metadata_reads_of_a_cpu_argument_pass_while_capturing():
    x = torch.ones(2, 3)
    with _mode(x) as mode:
        facts = (x.shape, x.dtype, x.device, x.size(1), x.dim(), len(x), x.numel())
    assert facts == (torch.Size([2, 3]), torch.float32, torch.device("cpu"), 3, 2, 2, 6) and mode.moved == []


def test_outside_capture_the_step_runs_as_written():
    x = torch.ones(3)
    with _mode(x, capturing=False) as mode:
        y = x[0] + 1
        z = x.to(torch.float64)
    assert y.item() == 2.0 and z.dtype == torch.float64 and mode.moved == []


@pytest.mark.cuda
@cuda
def test_graphed_step_moving_a_cpu_argument_replays_the_calls_values():
    from graphsafe.runtime import graphed

    weight = torch.randn(4, 4, device="cuda")

    def step(row):  # rwkv's shape: the embedding row made on the CPU, moved by the step
        x = row.to(dtype=torch.float32, device=weight.device)
        return torch.tanh(x @ weight)

    rows = [torch.randn(4) for _ in range(5)]
    fast = graphed(step, (rows[0],), batched=[])
    for row in rows:
        assert torch.allclose(fast(row), step(row), rtol=1e-6, atol=1e-6)
    assert fast.stats["replays"] == len(rows) and fast.stats["eager"] == 0



@pytest.mark.cuda
@cuda
def test_a_cpu_argument_the_step_never_reads_is_left_alone():
    # a dict of weights passed whole: the CPU entry the core does not read is no host work
    from graphsafe.runtime import graphed

    weights = {"emb": torch.randn(4), "w": torch.randn(4, device="cuda")}
    fast = graphed(lambda ws: ws["w"] * 2, (weights,), batched=[])
    assert torch.equal(fast(weights), weights["w"] * 2) and fast.stats["replays"] == 1


def test_tensor_ops_on_a_cpu_argument_are_run_again_before_each_replay_with_the_calls_values():
    x = torch.tensor([0.2, 0.9, 0.7])
    with _mode(x) as mode:
        gate = torch.atleast_1d(x > 0.5).view(-1, 1)  # kornia: to_apply = atleast_1d(batch_prob > 0.5)
        scaled = torch.cat([x, x]) * 2
        on_device = gate.to("meta")
    assert on_device.device.type == "meta" and gate.tolist() == [[False], [True], [True]]
    x.copy_(torch.tensor([0.8, 0.1, 0.6]))  # the next call's values, copied into the static argument
    fill(mode.moved)
    assert gate.tolist() == [[True], [False], [True]] and torch.equal(scaled, torch.cat([x, x]) * 2)
    assert callable(mode.moved[0][0]) and mode.moved[-1][1] is on_device  # recipes come before the copies


@pytest.mark.cuda
@cuda
def test_a_cpu_argument_moved_after_freed_temporaries_replays_the_calls_values():
    # kornia on an H200: a device buffer allocated during capture took a block that kernels earlier in the
    # graph had used for temporaries, so each replay wrote over the values graphed() filled in before it
    from graphsafe.runtime import graphed

    def step(x, gate):
        for _ in range(3):
            x = (x * 1.5 + 1).sin()  # small temporaries, freed during the capture
        on = torch.atleast_1d(gate > 0.5).view(-1, 1).to(x.device)
        return torch.where(on, x, -x)

    x = torch.randn(8, 1, device="cuda")
    gates = [torch.rand(8) for _ in range(6)]
    fast = graphed(step, (x, gates[0]), batched=[])
    for gate in gates:
        assert torch.equal(fast(x, gate), step(x, gate))
    assert fast.stats["replays"] == len(gates) and fast.stats["eager"] == 0
