"""The run-time tracer on CPU: each hazard kind, attribution to the user's line, no false
findings on graph-safe code, drift between calls, and clean-up after an exception.

On a CPU-only machine the tracer simulates a device (every tensor stands for a CUDA tensor), so
these tests see the would-be syncs. Lines are found by their `# L:name` markers.
"""

from __future__ import annotations

import inspect
import re
import sys
import warnings

import pytest
import torch

from graphsafe.runtime import Finding, TraceReport, trace
from graphsafe.runtime.tracer import StepTracer, Tracer, run_traced

pytestmark = pytest.mark.usefixtures("cpu_only_tracer")

SOURCE = inspect.getsource(sys.modules[__name__]).splitlines()


def line_of(marker: str) -> int:
    hits = [i for i, text in enumerate(SOURCE, 1) if re.search(rf"# L:{re.escape(marker)}\b", text)]
    assert len(hits) == 1, f"marker L:{marker} found {len(hits)} times"
    return hits[0]


def at(report: TraceReport, marker: str) -> list[Finding]:
    line = line_of(marker)
    return [f for f in report.findings if f.filename == __file__ and f.line == line]


def codes_at(report: TraceReport, marker: str) -> set[str]:
    return {f.code for f in at(report, marker)}


@pytest.fixture
def x():
    torch.manual_seed(0)
    return torch.tensor([0.5, -1.0, 2.0, -0.25])


# --- each hazard kind ---------------------------------------------------------------------------


def item_sync(x):
    return x.sum().item()  # L:item


def tolist_sync(x):
    return x.tolist()  # L:tolist


def print_sync(x, capsys=None):
    print(x)  # L:print
    return x


def fstring_sync(x):
    return f"{x.sum():.3f}"  # L:fstring


def repr_sync(x):
    return repr(x)  # L:repr


def float_sync(x):
    return float(x.sum())  # L:float


def int_sync(x):
    return int(x.argmax())  # L:int


def slice_bound_sync(x):
    return x[: torch.tensor(2)]  # L:slice


def branch(x):
    if x.sum() > 0:  # L:branch
        return x
    return -x


def and_op(x):
    return (x > 0).any() and x.numel()  # L:and


def not_op(x):
    return not (x > 5).all()  # L:not


def nonzero_op(x):
    return torch.nonzero(x > 0)  # L:nonzero


def where_one_arg(x):
    return torch.where(x > 0)  # L:where1


def unique_op(x):
    return torch.unique(x)  # L:unique


def masked_select_op(x):
    return torch.masked_select(x, x > 0)  # L:masked_select


def repeat_interleave_op(x):
    return x.repeat_interleave(torch.tensor([1, 2, 1, 1]))  # L:repeat


def bincount_op(x):
    return torch.bincount(torch.tensor([1, 2, 2]))  # L:bincount


def one_hot_op(x):
    return torch.nn.functional.one_hot(torch.tensor([0, 2]))  # L:one_hot


def mask_read(x):
    return x[x > 0]  # L:mask_read


def mask_write_tensor(x):
    y = x.clone()
    y[torch.tensor([True, False, True, False])] = torch.tensor([7.0, 8.0])  # L:mask_write
    return y


def equal_op(x):
    return torch.equal(x, x)  # L:equal


def allclose_op(x):
    return torch.allclose(x, x + 1e-9)  # L:allclose


def cpu_copy(x):
    return x.cpu()  # L:cpu


def to_cpu_copy(x):
    return x.to("cpu")  # L:to_cpu


def explicit_sync(x):
    try:
        torch.cuda.synchronize()  # L:synchronize
    except (AssertionError, RuntimeError):  # no CUDA here: the wrapper saw the call first
        pass
    return x


def host_data_to_cuda(x):
    try:
        torch.tensor([1.0, 2.0], device="cuda")  # L:tensor_cuda
    except (AssertionError, RuntimeError):
        pass
    return x


def host_data_device_agnostic(x):
    return torch.tensor([1.0, 2.0], device=x.device) + x[:2]  # L:tensor_device


def tensor_to_cuda(x):
    try:
        x.to("cuda")  # L:to_cuda
    except (AssertionError, RuntimeError):
        pass
    return x


def custom_generator(x, generator):
    return torch.randn(4, generator=generator) + x  # L:generator


def clip_nonfinite(x):
    p = torch.nn.Parameter(x.clone())
    p.grad = torch.ones_like(x)
    torch.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)  # L:clip
    return p


HAZARDS = [
    (item_sync, "item", "GS101"),
    (tolist_sync, "tolist", "GS102"),
    (print_sync, "print", "GS104"),
    (fstring_sync, "fstring", "GS104"),
    (repr_sync, "repr", "GS104"),
    (float_sync, "float", "GS105"),
    (int_sync, "int", "GS105"),
    (slice_bound_sync, "slice", "GS105"),
    (branch, "branch", "GS201"),
    (and_op, "and", "GS201"),
    (not_op, "not", "GS201"),
    (nonzero_op, "nonzero", "GS107"),
    (where_one_arg, "where1", "GS107"),
    (unique_op, "unique", "GS107"),
    (masked_select_op, "masked_select", "GS107"),
    (repeat_interleave_op, "repeat", "GS107"),
    (bincount_op, "bincount", "GS107"),
    (one_hot_op, "one_hot", "GS107"),
    (mask_read, "mask_read", "GS108"),
    (mask_write_tensor, "mask_write", "GS108"),
    (equal_op, "equal", "GS109"),
    (allclose_op, "allclose", "GS109"),
    (cpu_copy, "cpu", "GS103"),
    (to_cpu_copy, "to_cpu", "GS103"),
    (explicit_sync, "synchronize", "GS106"),
    (host_data_to_cuda, "tensor_cuda", "GS402"),
    (host_data_device_agnostic, "tensor_device", "GS402"),
    (tensor_to_cuda, "to_cuda", "GS402"),
    (clip_nonfinite, "clip", "GS110"),
]


@pytest.mark.parametrize(("step", "marker", "code"), HAZARDS, ids=[h[1] for h in HAZARDS])
def test_each_hazard_is_reported_once_per_call_at_its_line(step, marker, code, x, capsys):
    report = trace(step, x, steps=2)
    found = at(report, marker)
    assert [f.code for f in found] == [code], report.to_text()
    assert found[0].hits == 2  # one user operation, one hit per call: not also counted at dispatch level
    assert found[0].function == step.__name__
    assert all(f.filename == __file__ for f in report.findings), "attributed outside the user's code"


def to_numpy(x):
    return x.numpy()  # L:numpy


def test_numpy_is_a_host_copy(x):
    pytest.importorskip("numpy")
    report = trace(to_numpy, x, steps=2)
    assert [(f.code, f.hits) for f in at(report, "numpy")] == [("GS103", 2)]


def test_custom_generator_is_reported(x):
    report = trace(custom_generator, x, torch.Generator().manual_seed(1), steps=2)
    assert codes_at(report, "generator") == {"GS601"}


def test_default_generator_is_not_reported(x):
    report = trace(custom_generator, x, None, steps=2)
    assert report.findings == []


def test_item_is_one_finding_with_its_own_code_not_a_generic_host_read(x):
    report = trace(item_sync, x, steps=3)
    assert [(f.code, f.hits) for f in report.findings] == [("GS101", 3)]
    assert report.findings[0].seen_by == ("torch-function",)


def test_clip_without_nonfinite_check_is_clean(x):
    def clip(x):
        p = torch.nn.Parameter(x.clone())
        p.grad = torch.ones_like(x)
        torch.nn.utils.clip_grad_norm_([p], 1.0)
        return p

    assert trace(clip, x, steps=2).findings == []


# --- attribution --------------------------------------------------------------------------------


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.linear(x)
        return self.gate(h)  # L:module_call_gate

    def gate(self, h):
        if h.mean() > -100:  # L:module_branch
            return h
        return h * 0


def inner_read(t):
    return t.max().item()  # L:inner_item


def middle(t):
    return inner_read(t * 2)  # L:middle_call


def outer_step(model, x):
    y = model(x)  # L:outer_model_call
    return middle(y)  # L:outer_middle_call


def test_attribution_follows_nested_calls_and_module_calls(x):
    report = trace(outer_step, Scorer(), x, steps=1)
    item = at(report, "inner_item")
    assert [f.code for f in item] == ["GS101"]
    stack_lines = [frame.line for frame in item[0].stack]
    assert stack_lines == [line_of("outer_middle_call"), line_of("middle_call"), line_of("inner_item")]

    branch = at(report, "module_branch")
    assert [f.code for f in branch] == ["GS201"]
    assert branch[0].function == "Scorer.gate"
    # torch's Module.__call__ frames are skipped, the user's frames kept, outermost first
    assert [frame.line for frame in branch[0].stack] == [
        line_of("outer_model_call"), line_of("module_call_gate"), line_of("module_branch")
    ]
    assert len(report.findings) == 2, report.to_text()


def test_column_points_into_the_line(x):
    report = trace(item_sync, x, steps=1)
    finding = report.findings[0]
    text = SOURCE[finding.line - 1]
    assert finding.column == text.index("x.sum()") + 1


class Sampler(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        scale = grad.abs().max().item()  # L:backward_item
        return grad * 2 / max(scale, 1.0)


def backward_step(x):
    w = x.clone().requires_grad_()
    Sampler.apply(w).sum().backward()  # L:backward_call
    return w.grad


def test_hazard_in_backward_is_attributed_to_the_backward_code(x):
    report = trace(backward_step, x, steps=1)
    # Autograd runs backward without the torch-function mode: the dispatch level sees the read
    # (_local_scalar_dense) and names it generically.
    assert codes_at(report, "backward_item") == {"GS105"}
    assert [f.line for f in report.findings] == [line_of("backward_item")]


# --- no false findings --------------------------------------------------------------------------


def graph_safe_step(x, mask):
    y = torch.where(mask, x, 0.0)  # 3-arg where: fixed shape
    y = y.clone()
    y[mask] = 0.0  # masked_fill_ with a host scalar
    if x.shape[0] > 2 and x.dim() == 1 and x is not None:
        y = y + 1
    n = x.shape[0]
    half = x[: n // 2]
    hot = torch.nn.functional.one_hot(torch.arange(3), 4)  # num_classes given
    rep = x.repeat_interleave(torch.tensor([1, 1, 1, 1]), output_size=4)
    same = x.to(torch.float64).to(y).to(x.device)
    size = len(x) + x.numel() + x.size(0)
    z = torch.zeros(size, device=x.device)
    return y.sum() + half.sum() + hot.sum() + rep.sum() + same.sum() + z.sum()


def test_graph_safe_code_has_no_findings(x):
    mask = x > 0
    report = trace(graph_safe_step, x, mask, steps=3)
    assert report.findings == [], report.to_text()


def train_step(model, opt, x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def test_capturable_style_training_step_with_sgd_is_clean():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(4, 8), torch.randn(4, 2)
    report = trace(train_step, model, opt, x, y, steps=3)
    assert report.findings == [], report.to_text()
    assert isinstance(report.result, torch.Tensor)


# --- between calls ------------------------------------------------------------------------------


def scaled(x, scale, *, bias=0.0):  # L:scaled_def
    return x * scale + bias


def test_python_scalar_drift_positional_and_keyword(x):
    report = trace(scaled, steps=3, args_factory=lambda step: ((x, 1.0 + step), {"bias": 0.5}))
    drift = at(report, "scaled_def")
    assert [f.code for f in drift] == ["GS301"]
    assert drift[0].hits == 2
    assert drift[0].details == ("scale: 1.0 → 2.0",)

    report = trace(scaled, steps=2, args_factory=lambda step: ((x, 2.0), {"bias": float(step)}))
    assert at(report, "scaled_def")[0].details == ("bias: 0.0 → 1.0",)


def test_constant_scalars_and_same_tensors_do_not_drift(x):
    report = trace(scaled, x, 2.0, bias=1.0, steps=3)
    assert report.findings == []


class Temperature(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.temperature = 1.0

    def forward(self, x):  # L:temperature_forward
        return x / self.temperature


def test_numeric_attribute_of_a_module_argument_drifts(x):
    module = Temperature()

    def factory(step):
        module.temperature = 1.0 + step
        return (module, x), {}

    report = trace(lambda m, t: m(t), steps=2, args_factory=factory)
    (finding,) = report.findings
    assert finding.code == "GS301"
    assert finding.details == ("m.temperature: 1.0 → 2.0",)


def test_numeric_attribute_of_self_drifts_for_a_module_and_a_bound_method(x):
    module = Temperature()
    calls = iter([1.0, 0.5])

    def factory(step):
        module.temperature = next(calls)
        return (x,), {}

    report = trace(module, steps=2, args_factory=factory)
    assert [(f.code, f.line, f.details) for f in report.findings] == [
        ("GS301", line_of("temperature_forward"), ("self.temperature: 1.0 → 0.5",))
    ]

    class Trainer:
        def __init__(self):
            self.step_count = 0

        def step(self, t):
            self.step_count += 1
            return t * 2

    report = trace(Trainer().step, x, steps=3)
    (finding,) = report.findings
    assert finding.code == "GS301" and finding.hits == 2
    assert finding.details == ("self.step_count: 0 → 1",)  # seen on entry


def test_optimizer_learning_rate_drift():
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    x, y = torch.randn(3, 2), torch.randn(3, 2)

    def factory(step):
        if step:
            sched.step()
        return (model, opt, x, y), {}

    report = trace(train_step, steps=3, args_factory=factory)
    (finding,) = report.findings
    assert finding.code == "GS301"
    assert finding.details[0].startswith("opt.param_groups[0]['lr']: 0.1 → 0.05")


def test_shape_and_dtype_drift(x):
    inputs = [x, torch.randn(6), torch.randn(6, dtype=torch.float64)]
    report = trace(lambda t: t * 2, steps=3, args_factory=lambda step: (inputs[step],))
    (finding,) = report.findings
    assert finding.code == "GS403" and finding.hits == 2
    assert finding.details == ("t: shape (4,) → (6,)", "t: dtype torch.float32 → torch.float64")


def test_rebinding_is_reported_and_copy_into_a_static_input_is_not(x):
    fresh = [x.clone() for _ in range(3)]  # kept alive: no address reuse
    report = trace(lambda t: t * 2, steps=3, args_factory=lambda step: (fresh[step],))
    assert [(f.code, f.hits, f.details) for f in report.findings] == [("GS401", 2, ("t",))]

    static = x.clone()

    def refill(step):
        static.copy_(fresh[step])
        return (static,)

    assert trace(lambda t: t * 2, steps=3, args_factory=refill).findings == []


def test_module_buffer_rebinding_is_reported(x):
    class Cache(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("state", torch.zeros(4))

        def forward(self, t):
            self.state = self.state + t  # rebinds the buffer: replay would read the old one
            return self.state

    report = trace(Cache(), x, steps=3)
    assert [(f.code, f.details) for f in report.findings] == [("GS401", ("self.state",))]


def test_inputs_in_containers_are_compared(x):
    batches = [{"ids": torch.ones(2, 3), "scale": 1.0}, {"ids": torch.ones(2, 5), "scale": 2.0}]
    report = trace(lambda batch: batch["ids"] * batch["scale"], steps=2, args_factory=lambda step: (batches[step],))
    assert {(f.code, f.details) for f in report.findings} == {
        ("GS403", ("batch['ids']: shape (2, 3) → (2, 5)",)),
        ("GS301", ("batch['scale']: 1.0 → 2.0",)),
    }


# --- clean-up, semantics, API -------------------------------------------------------------------


def _modes_active() -> bool:
    return torch._C._is_torch_function_mode_enabled() or torch._C._len_torch_dispatch_stack() > 0


def raising_step(x):
    x.sum().item()
    raise ValueError("boom")


def test_modes_and_wrappers_are_removed_when_the_step_raises(x):
    synchronize, event_query = torch.cuda.synchronize, torch.cuda.Event.query
    with pytest.raises(ValueError, match="boom"):
        trace(raising_step, x, steps=2)
    assert not _modes_active()
    assert torch.cuda.synchronize is synchronize
    assert torch.cuda.Event.query is event_query
    assert "synchronize" in torch.cuda.Stream.__dict__  # restored as the class's own attribute


def test_modes_are_active_only_during_the_step(x):
    seen = []

    def step(t):
        seen.append(_modes_active())
        return t

    trace(step, x, steps=2)
    assert seen == [True, True]
    assert not _modes_active()


def test_step_semantics_and_result_are_unchanged(x):
    def step(t):
        return (t * 3).softmax(0), t.sum().item(), repr(t.shape)

    expected = step(x)
    report = trace(step, x, steps=2)
    result = report.result
    assert torch.equal(result[0], expected[0]) and result[1:] == expected[1:]
    assert report.steps == 2 and report.seconds > 0


def test_args_factory_and_arguments_are_exclusive(x):
    with pytest.raises(ValueError):
        trace(item_sync, x, args_factory=lambda step: (x,))
    with pytest.raises(ValueError):
        trace(item_sync, x, steps=0)


def test_a_real_device_machine_does_not_report_host_reads_of_host_tensors(x):
    stepper = StepTracer(item_sync, simulate=False)  # as on a GPU machine: x is a CPU tensor there
    stepper.step((x,), {})
    assert stepper.report().findings == []


def test_tracer_cannot_be_activated_twice(x):
    tracer = Tracer()
    tracer.activate(stop_frame=None)
    try:
        with pytest.raises(RuntimeError):
            tracer.activate(stop_frame=None)
    finally:
        tracer.deactivate()
    assert not _modes_active()


def test_sync_debug_warnings_merge_with_the_mode_finding_of_the_same_line(x, monkeypatch):
    # The CUDA path without a GPU: torch's sync debug mode is faked, its warning raised by hand.
    modes = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: 0)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)
    message = "called a synchronizing CUDA operation (Triggered internally at CUDAFunctions.cpp:1.)"
    tracer = Tracer(simulate=True)
    show = warnings.showwarning

    def step(t):
        t.sum().item(); warnings.warn(message)  # L:warn_merged  # noqa: E702
        for _ in range(2):
            warnings.warn(message)  # L:warn_alone
        return t

    run_traced(tracer, step, (x,), {})
    assert modes == ["warn", 0]  # switched on for the step, back afterwards
    assert warnings.showwarning is show
    findings = {f.line: f for f in tracer.recorder.findings()}
    merged = findings[line_of("warn_merged")]
    assert (merged.code, merged.hits, merged.seen_by) == ("GS101", 1, ("torch-function", "sync-debug"))
    alone = findings[line_of("warn_alone")]
    # both warnings from one place reached the hook (torch's default would show only the first)
    assert (alone.code, alone.hits, alone.seen_by) == ("GS106", 2, ("sync-debug",))
    assert len(findings) == 2


def test_report_text_and_json(x):
    report = trace(outer_step, Scorer(), x, steps=2)
    text = report.to_text()
    first = text.splitlines()[0]
    assert re.fullmatch(r"\S+\.py:\d+:\d+: GS\d{3} .+ \(2 hits\)", first), first
    assert text.splitlines()[1].startswith("    ")
    assert text.rstrip().endswith("s).") and "Found 2 hazards in 2 traced calls" in text
    entries = report.to_json()
    assert [e["code"] for e in entries] == [f.code for f in report.findings]
    assert set(entries[0]) >= {"code", "message", "filename", "location", "hits", "stack", "function"}
    assert entries[0]["location"] == {"row": report.findings[0].line, "column": report.findings[0].column}
