"""Host reads of device data inside a graphed region, baked with a device-checked guard
(runtime/host_read_guards.py): the warm-up's value is baked, a replay whose tensors would have
read another value is thrown away and the call runs eagerly. On CPU, graphed(backend="eager")
simulates the capture: each simulated replay runs the region with the baked values, as a graph
would, and the guard's flag decides the fallback."""
import pytest
import torch

from graphsafe.runtime import graphed
from graphsafe.runtime.graphed import GraphedInputError
from graphsafe.runtime.host_read_guards import HostReadGuards, HostReadNotBaked

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equal, a NaN equal to a NaN."""
    return a.shape == b.shape and bool(((a == b) | (a.isnan() & b.isnan())).all())


def kernel_like(x1, x2):  # gpytorch's kernel: a branch on torch.equal of its two inputs
    if torch.equal(x1, x2):
        return torch.zeros(x1.shape[0])
    return (x1 - x2).pow(2).sum(-1)


def test_torch_equal_baked_with_a_guard_gives_the_eager_result_on_every_call():
    fast = graphed(kernel_like, backend="eager", batched=[])
    x = torch.ones(4, 2)
    others = [x.clone(), x.clone(), x + 1, x.clone(), torch.full((4, 2), float("nan")), x.clone()]
    for other in others:
        assert same(fast(x, other), kernel_like(x, other))
    assert fast.stats["fallbacks"] == 2 and fast.stats["replays"] == 4  # x + 1 and the NaNs


def test_torch_equal_of_a_tensor_with_itself_fires_only_on_a_nan():
    def region(a):
        return a * 2 if torch.equal(a, a) else a * 0  # torch.equal: NaN is never equal, even to itself

    fast = graphed(region, backend="eager", batched=[])
    calls = [torch.ones(3), torch.arange(3.0), torch.tensor([1.0, float("nan"), 2.0]), torch.ones(3)]
    for a in calls:
        assert same(fast(a), region(a))
    assert fast.stats["fallbacks"] == 1  # the call with a NaN


def test_allclose_method_baked_with_its_tolerances_falls_back_past_them():
    def region(a, b):
        return a + 1 if a.allclose(b, atol=0.1) else a - 1

    fast = graphed(region, backend="eager", batched=[])
    a = torch.zeros(3)
    for shift in [0.0, 0.0, 0.05, 0.5, 0.0]:  # within the tolerance but 0.5
        b = a + shift
        assert same(fast(a, b), region(a, b))
    assert fast.stats["fallbacks"] == 1 and fast.stats["replays"] == 4


def test_reads_at_one_line_are_baked_per_occurrence_in_the_call():
    def region(a, b, c):
        total = torch.zeros(())
        for other in (b, c):  # one line, two reads per call: True then False at warm-up
            total = total + (1.0 if torch.equal(a, other) else 10.0)
        return total

    fast = graphed(region, backend="eager", batched=[])
    a = torch.ones(2)
    for b, c in [(a, a + 1), (a, a + 1), (a + 1, a + 1), (a, a), (a, a + 2)]:
        assert same(fast(a, b, c), region(a, b, c))
    assert fast.stats["fallbacks"] == 2 and fast.stats["replays"] == 3
    assert sorted(key[2] for key in fast.graphs[0].guards.sites) == [0, 1]


def test_item_of_a_bool_is_baked_with_a_guard_and_falls_back_when_the_value_changes():
    def region(x, n):
        if (n > 1).all().item():  # a branch decided on the device
            x = x * 2
        return x

    fast = graphed(region, backend="eager", batched=[])
    x = torch.ones(2)
    counts = [2, 2, 0, 2, 1, 2]
    with pytest.warns(RuntimeWarning, match=r"would read another value on this call"):
        for n in counts:
            assert torch.equal(fast(x, torch.tensor(n)), region(x, torch.tensor(n)))
    assert fast.stats["fallbacks"] == 2 and fast.stats["replays"] == 4


def test_reads_of_numbers_are_not_baked_they_stay_capture_errors():
    guards = HostReadGuards(simulated=True)
    n = torch.tensor(3)
    with guards.call():
        n.item(), int(n), float(n), n.tolist()
    guards.capture_begins()
    with guards.call():  # simulated capture: not intercepted, so no baked value (a sync on a GPU)
        assert n.item() == 3
    assert guards.sites == {} and guards.baked == []


def test_bool_guard_compares_truth_values_not_numbers():
    def region(x, m):
        return x + 1 if m else x - 1  # bool() of a one-element tensor

    fast = graphed(region, backend="eager", batched=[])
    x = torch.zeros(2)
    for m in [2.0, 2.0, 5.0, -1.0, 0.0, 3.0]:  # all true but 0.0
        assert torch.equal(fast(x, torch.tensor(m)), region(x, torch.tensor(m)))
    assert fast.stats["fallbacks"] == 1


def test_a_read_whose_value_differs_between_warm_up_calls_is_not_baked_and_names_its_line():
    calls = []

    def region(x):
        calls.append(1)
        if torch.tensor(len(calls) > 1):  # False, True, True over the warm-up
            return x + 1
        return x

    with pytest.raises(HostReadNotBaked, match=r"bool\(\) at .*test_host_read_guards\.py:\d+ .*\(False, True, True\)"):
        graphed(region, backend="eager", batched=[])(torch.zeros(2))


def test_a_guarded_region_that_writes_state_in_place_is_refused_with_the_line():
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("seen", torch.zeros(()))

        def forward(self, a, b):
            self.seen.add_(1)  # a replay thrown away would already have counted this call
            return a * 2 if torch.equal(a, b) else a

    with pytest.raises(GraphedInputError, match=r"test_host_read_guards\.py:\d+ \(torch\.equal\).*writes state in place"):
        graphed(Counter(), backend="eager", batched=[])(torch.ones(2), torch.ones(2))


TOTAL = torch.zeros(())


def writes_a_closure_tensor():
    seen = torch.zeros(())

    def region(a, b):
        seen.add_(1)
        return a * 2 if torch.equal(a, b) else a

    return region


def writes_a_global_tensor(a, b):
    TOTAL.add_(a.sum())
    return a * 2 if torch.equal(a, b) else a


def writes_its_argument(a, b):
    b.mul_(1)  # an argument mutated: graphed() copies it back after each replay
    return a * 2 if torch.equal(a, b) else a


@pytest.mark.parametrize("region", [writes_a_closure_tensor(), writes_a_global_tensor, writes_its_argument])
def test_guards_are_refused_for_closure_global_and_argument_writes(region):
    with pytest.raises(GraphedInputError, match=r"\(torch\.equal\).*writes state in place"):
        graphed(region, backend="eager", batched=[])(torch.ones(2), torch.ones(2))


def test_a_guarded_loss_region_that_writes_a_buffer_is_refused_with_the_line():
    class Tracking(torch.nn.Module):  # a loss module keeping a running count: state written in place
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(()))

        def forward(self, mean, target):
            self.calls.add_(1)
            same = torch.equal(mean.detach(), target)
            return ((mean - target) ** 2).sum() * (1.0 if same else 2.0)

    weight = torch.ones(2, requires_grad=True)
    with pytest.raises(GraphedInputError, match=r"test_host_read_guards\.py:\d+ \(torch\.equal\).*writes state in place"):
        graphed(Tracking(), backend="eager")(weight * 1, torch.ones(2))


def test_a_training_step_gets_no_guards_its_reads_run_as_written():
    # a whole step writes its parameters in place: a replay could not be thrown away
    weight = torch.ones(2, requires_grad=True)
    counts = []

    def step(x):
        loss = (x @ weight).pow(2).mean()
        loss.backward()
        counts.append(torch.tensor(float(len(counts))).item())  # differs on every call: never baked
        with torch.no_grad():
            weight.sub_(0.1 * weight.grad)
        return loss.detach()

    fast = graphed(step, backend="eager", train=True, batched=[])
    fast(torch.ones(3, 2))
    assert "fallbacks" not in fast.stats and not fast.graphs[0].guards.sites


def test_a_loss_region_with_a_backward_falls_back_with_its_gradients_equal_to_eager():
    class Dist:  # an object argument holding tensors (a distribution), as gpytorch's loss region takes
        def __init__(self, mean, points):
            self.mean, self.points = mean, points

    def loss(dist, target):
        same = torch.equal(dist.points, target)  # gpytorch's kernel.py:340, reached inside the region
        return ((dist.mean - target) ** 2).sum() + (0.0 if same else dist.mean.sum())

    weight = torch.ones(3, requires_grad=True)
    fast = graphed(loss, backend="eager")
    targets = [torch.zeros(3), torch.zeros(3), torch.ones(3), torch.zeros(3)]
    for target in targets:
        points = torch.zeros(3)
        out = fast(Dist(weight * 2, points), target)
        (grad,) = torch.autograd.grad(out, weight)
        expected = loss(Dist(weight * 2, points), target)
        (expected_grad,) = torch.autograd.grad(expected, weight)
        assert torch.equal(out, expected) and torch.equal(grad, expected_grad)
    assert fast.stats["fallbacks"] == 1 and fast.stats["replays"] == 3


def test_reads_of_large_tensors_and_differing_shapes_are_not_guarded():
    guards = HostReadGuards(simulated=True)
    big, small = torch.arange(100.0), torch.ones(2)
    with guards.call():
        big.tolist()
        torch.equal(small, torch.ones(3))  # decided by the shapes: no device read
    assert guards.sites == {}


def test_a_read_no_warm_up_call_reached_is_not_baked():
    guards = HostReadGuards(simulated=True)
    guards.capture_begins()  # the capture takes a path the warm-up did not
    with pytest.raises(HostReadNotBaked, match=r"bool\(\) at .*test_host_read_guards\.py:\d+ .*never reached"):
        with guards.call():
            bool(torch.ones(()))


def test_a_read_not_baked_is_classified_as_its_sync_rule_at_its_line():
    from graphsafe.runtime.classify import classify_exception

    guards = HostReadGuards(simulated=True)
    guards.capture_begins()
    a = torch.ones(2)
    with pytest.raises(HostReadNotBaked) as raised:
        with guards.call():
            same = torch.equal(a, a)  # noqa: F841  (the line the failure names)
    failure = classify_exception(raised.value, phase="capture")
    assert failure.code == "GS109" and failure.file.endswith("test_host_read_guards.py")
    assert "cannot be baked" in failure.cause


def test_outside_a_capture_the_mode_only_records():
    guards = HostReadGuards(simulated=True)
    t = torch.tensor([1.0, 2.0])
    with guards.call():
        values = (t.tolist(), t[0].item(), bool(t[1]))
    assert values == ([1.0, 2.0], 1.0, True) and guards.flag is None and not guards.fired()
    assert [site.values for site in guards.sites.values()] == [[True]]  # numbers are not recorded


@pytest.mark.cuda
@cuda
def test_cuda_graph_with_a_baked_torch_equal_replays_and_falls_back_when_it_differs():
    fast = graphed(kernel_like, batched=[])
    x = torch.ones(4, 2, device="cuda")
    others = [x.clone(), x.clone(), x + 1, x.clone(), torch.full_like(x, float("nan"))]
    for other in others:
        assert same(fast(x, other), kernel_like(x, other))
    assert fast.stats["fallbacks"] == 2 and fast.stats["replays"] == 3


@pytest.mark.cuda
@cuda
def test_cuda_loss_region_with_a_baked_read_falls_back_with_eager_gradients():
    weight = torch.ones(3, device="cuda", requires_grad=True)

    def loss(mean, points, target):
        same = torch.equal(points, target)
        return ((mean - target) ** 2).sum() + (0.0 if same else mean.sum())

    fast = graphed(loss)
    for target in [torch.zeros(3, device="cuda")] * 2 + [torch.ones(3, device="cuda"), torch.zeros(3, device="cuda")]:
        points = torch.zeros(3, device="cuda")
        out = fast(weight * 2, points, target)
        (grad,) = torch.autograd.grad(out, weight)
        expected = loss(weight * 2, points, target)
        (expected_grad,) = torch.autograd.grad(expected, weight)
        assert torch.allclose(out, expected) and torch.allclose(grad, expected_grad)
    assert fast.stats["fallbacks"] == 1 and fast.stats["replays"] == 3


@pytest.mark.cuda
@cuda
def test_cuda_capture_of_a_read_that_differs_between_warm_up_calls_fails_with_its_line():
    from graphsafe.runtime.graphed import GraphedCaptureError

    calls = []

    def region(x):
        calls.append(1)
        if (x.sum() * len(calls)).item() > 1:  # 1, 2, 3, ... over the warm-up: never one value
            return x + 1
        return x

    with pytest.raises(GraphedCaptureError, match=r"test_host_read_guards\.py:\d+"):
        graphed(region, batched=[])(torch.ones(1, device="cuda"))
