"""Finished corpus programs (tests/finish.py): after `graphsafe graph --region R` alone (the
programs of finish.GRAPHED, no finish.diff), or after `fix --unsafe-fixes` and the hand edits of
`finish.diff` (the others), a program

  - has no diagnostic left (every hazard `check` reported is gone, none is silenced by noqa; for
    `graph`: nothing it lists as blocking the capture of the split core);
  - computes the original program's numbers on CPU (run(), rel 1e-6 / abs 1e-9, like unsafe fixes),
    except outputs listed below with the reason. GS701's `capturable=True` is CUDA-only (Adam-family
    optimizers refuse it for CPU parameters), so a finished program makes it conditional on the
    device, as real code that runs on both does;
  - still builds its GPU step through its `capture.py` factory and runs it through a simulated
    trial (the real capture is bench/bench_corpus_capture.py --variants finished, on a GPU).
"""

from __future__ import annotations

import re

import pytest

from graphsafe.analyzer.engine import check_paths
from graphsafe.config import Settings
from tests import finish, golden_fix, program_runner
from tests.corpus_factory import simulated_trial

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

PROGRAMS = finish.programs()
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[\w, ]+))?", re.IGNORECASE)
# Outputs of run() that count what the hand edits move out of the step by design, (program, key) -> why.
CHANGED_BY_DESIGN: dict[tuple[str, str], str] = {}


def _silences_graphsafe(line: str) -> bool:
    """A bare `# noqa` or one naming a GS code (other linters' codes, e.g. ruff's E402, are fine)."""
    m = NOQA.search(line)
    return bool(m) and (not m.group("codes") or any(c.strip().upper().startswith("GS")
                                                      for c in m.group("codes").split(",")))


def test_finished_programs_exist_each_finished_one_way():
    """Each finished program: by its finish.diff's hand edits, or by `graph` alone (finish.GRAPHED;
    since moe_router's went, every one is), never both."""
    assert PROGRAMS or finish.GRAPHED, "no corpus program is finished"
    assert not {p.name for p in PROGRAMS} & set(finish.GRAPHED)
    assert all((finish.CORPUS / name).is_dir() for name in finish.GRAPHED)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_finished_program_is_clean_and_keeps_results(program, tmp_path):
    finished = finish.finished_copy(program, tmp_path)
    added = [line for line in (program / finish.FINISH).read_text(encoding="utf-8").splitlines()
             if line.startswith("+") and _silences_graphsafe(line)]
    assert added == [], "a finish.diff must fix hazards, not silence them"

    left = check_paths([finished], Settings(root=tmp_path), use_cache=False, jobs=1).diagnostics
    assert [f"{d.path}:{d.start.line} {d.code} {d.message}" for d in left] == []

    if not (program / "run.py").exists():
        return
    expected = program_runner.corpus_result(program)
    got = golden_fix.run_program(finished)
    for (name, key), _why in CHANGED_BY_DESIGN.items():
        if name == program.name:
            expected.pop(key, None), got.pop(key, None)
    assert golden_fix.different_numbers(expected, got, rel=1e-6, abs_=1e-9) == [], \
        "the finished program computes other numbers"


@pytest.mark.parametrize("program", [p for p in PROGRAMS if (p / "capture.py").exists()], ids=lambda p: p.name)
def test_finished_factory_runs_through_a_simulated_trial(program, tmp_path):
    finished = finish.finished_copy(program, tmp_path)
    report = simulated_trial(finished / "capture.py", program.name)
    # the finished step keeps no Python state between calls: the simulated replays match eager
    assert report.status == "ok", report.to_text()
    assert report.comparisons, "no state was tracked"


@pytest.mark.parametrize("name", sorted(finish.GRAPHED))
def test_graph_alone_leaves_a_capturable_core_with_the_original_results(name, tmp_path):
    program = finish.CORPUS / name
    assert not (program / finish.FINISH).exists(), "graph reaches it alone: its hand edits are gone"
    graphed, result = finish.graphed_copy(program, tmp_path)
    assert result.split.source is not None, result.split.refusal
    assert [f"{d.path}:{d.start.line} {d.code} {d.message}" for d in result.blocking] == []
    assert result.callee_refusals == []
    assert golden_fix.different_numbers(program_runner.corpus_result(program), golden_fix.run_program(graphed),
                                        rel=1e-6, abs_=1e-9) == [], "the graphed program computes other numbers"


@pytest.mark.parametrize("name", sorted(finish.GRAPHED))
def test_graphed_factory_still_builds_and_steps(name, tmp_path):
    """capture.py's factory (what bench/graph_path.py wires on a GPU) builds the split program's
    step, which runs on CPU call after call, through its core."""
    import importlib.util
    import sys

    graphed, result = finish.graphed_copy(finish.CORPUS / name, tmp_path)
    sys.path.insert(0, str(graphed))
    try:
        spec = importlib.util.spec_from_file_location(f"capture_{name}", graphed / "capture.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        built = module.make("cpu")
        step = built["step"]  # a model, a method, or a module function whose core sits beside it in its module
        owner = step if hasattr(step, "_modules") else getattr(step, "__self__", None) or sys.modules[step.__module__]
        assert hasattr(owner, result.core.rpartition(".")[2])
        for _ in range(3):
            built["step"](*built["args"])
    finally:
        sys.path.remove(str(graphed))
        for loaded in [m for m, v in sys.modules.items() if str(graphed) in str(getattr(v, "__file__", "") or "")]:
            del sys.modules[loaded]


def test_patch_round_trip_and_exact_context(tmp_path):
    """finish.diff is applied by our own strict applier (the GPU machine has no git or patch)."""
    import difflib

    before = {"a.py": "one\ntwo\nthree\nfour\n", "gone.py": "x = 1\n"}
    after = {"a.py": "one\n2\nthree\nfour\nfive\n", "new.py": "y = 2\n"}
    text = ""
    for rel in sorted(set(before) | set(after)):
        text += "".join(difflib.unified_diff(
            before.get(rel, "").splitlines(keepends=True), after.get(rel, "").splitlines(keepends=True),
            f"a/p/{rel}" if rel in before else "/dev/null", f"b/p/{rel}" if rel in after else "/dev/null"))
    (tmp_path / "p").mkdir()
    for rel, body in before.items():
        (tmp_path / "p" / rel).write_text(body)
    finish.apply_patch(text, tmp_path)
    assert {p.name: p.read_text() for p in (tmp_path / "p").iterdir()} == after

    (tmp_path / "p" / "a.py").write_text("one\nTWO\nthree\nfour\n")
    (tmp_path / "p" / "gone.py").write_text("x = 1\n")
    (tmp_path / "p" / "new.py").unlink()
    with pytest.raises(finish.PatchError, match="a.py:2"):
        finish.apply_patch(text, tmp_path)
