"""The tracer on a real GPU, cross-checked with torch's own `set_sync_debug_mode("warn")`: it must
report every sync the debug mode reports (at the user's line, merged with its own finding), and
the ones the debug mode misses (DESIGN.md: synchronize, Event.synchronize/query, non_blocking D2H).
"""

from __future__ import annotations

import sys
import warnings

import pytest
import torch

from graphsafe.runtime import trace

pytestmark = pytest.mark.cuda

SYNC_MESSAGE = "called a synchronizing CUDA operation"


def sync_debug_lines(step, *args) -> list[int]:
    """Lines of this file where torch's sync debug mode warns, by our own attribution: the
    innermost frame of this file on the stack when the warning is shown."""
    lines: list[int] = []

    def show(message, category, filename, lineno, file=None, line=None):
        if SYNC_MESSAGE in str(message):
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename != __file__:
                frame = frame.f_back
            lines.append(frame.f_lineno if frame is not None else -1)

    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings():
        warnings.filterwarnings("always", message=".*" + SYNC_MESSAGE)
        warnings.showwarning = show
        torch.cuda.set_sync_debug_mode("warn")
        try:
            step(*args)
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    return lines


def lines_by_code(report) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for f in report.findings:
        if f.filename == __file__:
            out.setdefault(f.line, set()).add(f.code)
    return out


def many_syncs(x, mask, repeats, bound, values):
    a = x.sum().item()
    b = x.tolist()
    print(x)
    c = f"{x.sum():.3f}"
    d = float(x.max())
    if x.sum() > 0:
        x = x * 2
    e = torch.nonzero(x)
    f = x[mask]
    g = torch.unique(x)
    h = torch.masked_select(x, mask)
    i = x.repeat_interleave(repeats)
    j = torch.equal(x, x)
    k = x.cpu()
    y = x.clone()
    y[mask] = values
    m = x[:bound]
    n = torch.bincount(repeats)
    return a, b, c, d, e, f, g, h, i, j, k, y, m, n


def cuda_inputs():
    x = torch.tensor([0.5, -1.0, 2.0, -0.25], device="cuda")
    mask = x > 0
    repeats = torch.tensor([1, 2, 1, 1], device="cuda")
    bound = torch.tensor(2, device="cuda")
    values = torch.tensor([7.0, 8.0], device="cuda")
    torch.cuda.synchronize()
    return x, mask, repeats, bound, values


def test_every_sync_the_debug_mode_reports_is_reported_at_the_same_line():
    inputs = cuda_inputs()
    expected = sync_debug_lines(many_syncs, *inputs)
    assert expected, "the sync debug mode reported nothing: is it working?"
    report = trace(many_syncs, *inputs, steps=2)
    print(f"sync debug mode lines: {sorted(set(expected))}\n{report.to_text()}")  # shown with -s
    found = lines_by_code(report)
    missing = sorted(set(expected) - set(found))
    assert not missing, f"sync debug mode reported lines {missing} the tracer did not:\n{report.to_text()}"
    confirmed = {f.line for f in report.findings if "sync-debug" in f.seen_by}
    assert set(expected) <= confirmed, report.to_text()  # merged, not reported twice
    assert torch.cuda.get_sync_debug_mode() == 0


def missed_by_the_debug_mode(x):
    torch.cuda.synchronize()
    torch.cuda.current_stream().synchronize()
    event = torch.cuda.Event()
    event.record()
    event.synchronize()
    done = event.query()
    ready = torch.cuda.current_stream().query()
    host = x.to("cpu", non_blocking=True)
    return done, ready, host


def test_syncs_the_debug_mode_misses_are_reported():
    x = cuda_inputs()[0]
    originals = (torch.cuda.synchronize, torch.cuda.Event.query, torch.cuda.Stream.synchronize)
    debug_lines = set(sync_debug_lines(missed_by_the_debug_mode, x))
    report = trace(missed_by_the_debug_mode, x, steps=2)
    print(f"sync debug mode lines: {sorted(debug_lines)}\n{report.to_text()}")  # shown with -s
    first = missed_by_the_debug_mode.__code__.co_firstlineno
    expected = {first + 1: "GS106", first + 2: "GS106", first + 5: "GS106", first + 6: "GS106",
                first + 7: "GS106", first + 8: "GS103"}
    found = lines_by_code(report)
    assert {line: found.get(line) for line in expected} == {line: {code} for line, code in expected.items()}, (
        f"{report.to_text()}\n(sync debug mode itself reported lines {sorted(debug_lines)})"
    )
    assert (torch.cuda.synchronize, torch.cuda.Event.query, torch.cuda.Stream.synchronize) == originals


def host_to_device(x, pageable, pinned):
    a = pageable.to("cuda")
    b = pinned.to("cuda", non_blocking=True)
    c = torch.tensor([1.0, 2.0], device="cuda")
    x.copy_(pageable)
    return a, b, c


def test_pageable_host_to_device_copies_are_reported_and_pinned_ones_are_not():
    x = torch.zeros(4, device="cuda")
    pageable, pinned = torch.ones(4), torch.ones(4).pin_memory()
    report = trace(host_to_device, x, pageable, pinned, steps=1)
    first = host_to_device.__code__.co_firstlineno
    assert lines_by_code(report) == {first + 1: {"GS402"}, first + 3: {"GS402"}, first + 4: {"GS402"}}, report.to_text()


def sample(x, generator):
    return torch.randn(4, device="cuda", generator=generator) + x


def test_custom_cuda_generator_is_reported_and_the_default_is_not():
    x = torch.zeros(4, device="cuda")
    report = trace(sample, x, torch.Generator(device="cuda"), steps=1)
    assert {f.code for f in report.findings} == {"GS601"}
    assert trace(sample, x, None, steps=1).findings == []


def test_print_is_attributed_to_the_users_line_not_inside_torch():
    def show(t):
        print(t)
        return t

    report = trace(show, cuda_inputs()[0], steps=1)
    (finding,) = report.findings
    assert (finding.code, finding.line) == ("GS104", show.__code__.co_firstlineno + 1)
    assert "sync-debug" in finding.seen_by


def capturable_step(model, opt, x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=False)
    return loss


def test_capturable_training_step_is_clean_on_the_gpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 2)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(1e-3, device="cuda"), capturable=True)
    x, y = torch.randn(4, 8, device="cuda"), torch.randn(4, 2, device="cuda")
    report = trace(capturable_step, model, opt, x, y, steps=3)
    assert report.findings == [], report.to_text()
