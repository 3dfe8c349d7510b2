"""Per-file limits: CPython's nesting verdicts, CPU time (not wall-clock), the worker memory cap,
and worker deaths that lose no file."""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path

from graphsafe.analyzer import limits
from graphsafe.analyzer.engine import check_source, collect_facts
from graphsafe.analyzer.workers import WorkerDied, run_jobs

REGION = 'import torch\n\n\n@torch.compile(mode="reduce-overhead")\ndef step(a):\n    x = {expr}\n    return x.item()\n'


def codes(source: str) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in check_source(source, "deep.py").diagnostics]


def test_a_call_nested_300_deep_is_gs000_with_cpythons_message():
    found = codes("x = " + "f(" * 300 + "1" + ")" * 300 + "\n")
    assert found == [("GS000", "CPython rejects this file: too many nested parentheses; file skipped")]


def test_loops_nested_past_cpythons_block_limit_are_gs000():
    source = "".join(" " * i + "for a in b:\n" for i in range(21)) + " " * 21 + "pass\n"
    assert codes(source) == [("GS000", "CPython rejects this file: too many statically nested blocks; file skipped")]


def test_a_sum_deeper_than_the_default_recursion_limit_that_cpython_compiles_is_analysed():
    found = codes(REGION.format(expr=" + ".join(["a"] * 500)))
    assert [code for code, _ in found] == ["GS101"]


def test_an_and_chain_deeper_than_a_main_thread_stack_is_parsed_without_a_crash(monkeypatch):
    monkeypatch.setattr(limits, "CPU_LIMIT_S", 0.5)  # the walk of such a chain is slow; the parse is the point
    found = codes("x = " + " and ".join(["a"] * 12_000) + "\n")  # libcst overflows 8 MiB near 10,000
    assert found in ([], [("GS000", "CPU-time limit exceeded (0.5 s of CPU time); file skipped")])


def test_the_cpu_time_limit_gives_a_gs000_that_names_it(monkeypatch):
    monkeypatch.setattr(limits, "CPU_LIMIT_S", 0.2)
    found = codes(REGION.format(expr=" + ".join(["a"] * 900)))  # ~3 s of CPU
    assert found == [("GS000", "CPU-time limit exceeded (0.2 s of CPU time); file skipped")]


def test_waiting_does_not_count_against_the_cpu_time_limit():
    assert limits.run_limited(lambda: time.sleep(0.4) or "done", cpu_limit_s=0.1) == "done"


def _hog(_: int) -> int:
    """A native loop the asynchronous exception cannot stop (itertools in C)."""
    return sum(itertools.repeat(1, 10**11))


def _crash_on_two(value: int) -> int:
    if value == 2:
        os.kill(os.getpid(), signal.SIGSEGV)
    return value * 10


def test_a_worker_that_crashes_costs_its_own_job_only():
    answers = dict(run_jobs(_crash_on_two, [(1,), (2,), (3,), (4,)], 2))
    assert answers[0] == 10 and answers[2] == 30 and answers[3] == 40
    assert isinstance(answers[1], WorkerDied) and "SIGSEGV" in answers[1].reason


def test_a_worker_stuck_in_native_code_past_the_cpu_limit_is_stopped_by_the_kernel(monkeypatch):
    monkeypatch.setattr(limits, "CPU_LIMIT_S", 0.3)
    monkeypatch.setattr(limits, "CPU_GRACE_S", 0)
    started = time.monotonic()
    [(index, answer)] = list(run_jobs(_hog, [(0,)], 1))
    assert answer == WorkerDied("CPU-time limit exceeded (0.3 s of CPU time); file skipped")
    assert time.monotonic() - started < 30


def test_a_file_over_the_worker_memory_cap_is_one_gs000_and_the_others_are_analysed(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MEMORY_LIMIT_BYTES", 200 << 20)
    line = "x = " + "f(lambda: " * 199 + "1" + ")" * 199 + "\n"  # libcst: ~200 MB per line
    (tmp_path / "hog.py").write_text(line * 5)
    for i in range(8):
        (tmp_path / f"ok{i}.py").write_text(f"import torch\n\n\ndef f{i}(t):\n    return t.item()\n")
    files = sorted(tmp_path.glob("*.py"))
    facts, _ = collect_facts(files, tmp_path, jobs=2)
    errors = {Path(f.path).name: [e.message for e in f.errors] for f in facts}
    assert errors.pop("hog.py") == ["memory limit exceeded (200 MiB); file skipped"]
    assert errors == {f"ok{i}.py": [] for i in range(8)}
    assert all(f.units for f in facts if not f.path.endswith("hog.py"))


def test_cpythons_syntax_warnings_are_not_printed(capfd):
    assert codes("x = 1\nif x is 1:\n    pass\ny = '\\d'\n") == []
    assert capfd.readouterr().err == ""


def _functions(count: int) -> str:
    return "import torch\n\n\n" + "".join(
        f"def f{i}(x: torch.Tensor):\n    y = x * {i}\n    if y.sum() > 0:\n        y = y - x\n    return y.abs()\n\n\n"
        for i in range(count)
    )


def test_a_cancelled_analysis_stops_with_cancelled_past_every_function_guard():
    import threading

    import libcst as cst

    text = _functions(600)
    tree = cst.parse_module(text)  # the walk alone (pure Python, ~0.8 s here) is what is cancelled
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    started = time.monotonic()
    try:
        with limits.cancellable(cancel):
            check_source(text, "many.py", parse=lambda _: tree)
    except limits.Cancelled:
        pass
    else:
        raise AssertionError("the analysis ran to its end")
    assert time.monotonic() - started < 0.45  # the set, a 0.1 s poll, the delivery
    # outside the block, analyses run to their end again
    assert check_source("x = 1\n", "small.py").diagnostics == []


# -- big and deeply nested texts in a child process (limits.isolated) ----------------------------

HOG_LINE = "x = " + "f(lambda: " * 199 + "1" + ")" * 199 + "\n"  # libcst: ~200 MB a line, uncapped


def test_only_big_or_deeply_nested_texts_are_isolated():
    twenty_lines = REGION.format(expr="a + 1") * 3
    corpus_file = (Path(__file__).parent.parent / "corpus/dreamer_update/agent.py").read_text()
    assert not limits.needs_isolation(twenty_lines) and not limits.needs_isolation(corpus_file)
    assert limits.needs_isolation(HOG_LINE * 20)  # 44 KB, 3.9 GB in libcst
    assert limits.needs_isolation("x = 1\n" * (limits.ISOLATE_MIN_CHARS // 6 + 1))


def test_an_isolated_analysis_gives_the_in_process_diagnostics():
    from graphsafe.analyzer.workers import run_isolated
    from graphsafe.config import Settings

    path = Path(__file__).parent.parent / "corpus/dreamer_update/agent.py"
    text, settings = path.read_text(), Settings(regions=("*",))
    here = check_source(text, str(path), settings).diagnostics
    with limits.isolated(run_isolated):  # every analysis, whatever its size
        isolated = check_source(text, str(path), settings).diagnostics
    assert len(here) > 10 and isolated == here


def _memory_gs000(output: str) -> bool:
    return "GS000 memory limit exceeded (64 MiB); file skipped" in output


def test_check_of_one_file_in_process_stops_a_pathological_file_at_the_memory_cap(tmp_path, capsys, monkeypatch):
    from tests.helpers import run_cli

    monkeypatch.setattr(limits, "MEMORY_LIMIT_BYTES", 64 << 20)
    (tmp_path / "hog.py").write_text(HOG_LINE * 20)
    code, out, _ = run_cli(capsys, "check", "--no-cache", "--jobs", "1", "--output-format", "concise",
                           str(tmp_path / "hog.py"))
    assert code == 1 and _memory_gs000(out)


def test_check_of_stdin_stops_a_pathological_buffer_at_the_memory_cap(capsys, monkeypatch):
    import io
    import sys
    from types import SimpleNamespace

    from tests.helpers import run_cli

    monkeypatch.setattr(limits, "MEMORY_LIMIT_BYTES", 64 << 20)
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO((HOG_LINE * 20).encode())))
    code, out, _ = run_cli(capsys, "check", "--output-format", "concise", "--stdin-filename", "hog.py", "-")
    assert code == 1 and _memory_gs000(out)
