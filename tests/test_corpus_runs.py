"""Every corpus program runs on CPU, returns finite numbers, and is deterministic given its seed.

Each `corpus/<name>/run.py` is imported as a fresh module with its folder first on sys.path; the
folder's sibling modules (`model`, `train`, ...) share names across programs, so they are evicted
from sys.modules before and after each import."""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
PROGRAMS = sorted(p.parent.name for p in CORPUS.glob("*/run.py"))


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny ops on a busy machine: intra-op threads only add spinning (100x slower under load)."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


def _evict(folder: Path) -> None:
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f and Path(f).resolve().parent == folder:
            del sys.modules[name]


@contextlib.contextmanager
def _program(name: str):
    folder = (CORPUS / name).resolve()
    saved_path, saved_cwd = list(sys.path), os.getcwd()
    _evict(folder)
    sys.path.insert(0, str(folder))
    os.chdir(folder)  # programs are run as scripts from inside their folder
    try:
        spec = importlib.util.spec_from_file_location(f"corpus_run_{name}", folder / "run.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        _evict(folder)


def _run(name: str, **kwargs) -> dict[str, float]:
    with _program(name) as module:
        return module.run(**kwargs)


def test_corpus_is_not_empty():
    assert {"train_loop", "decode_loop", "negatives"} <= set(PROGRAMS)


@pytest.mark.parametrize("name", PROGRAMS)
def test_run_returns_finite_floats_and_is_deterministic(name):
    first = _run(name, steps=2)
    assert isinstance(first, dict) and first, f"{name}: run() must return a non-empty dict"
    for key, value in first.items():
        assert isinstance(key, str)
        assert isinstance(value, float), f"{name}: {key} is {type(value).__name__}, not float"
        assert math.isfinite(value), f"{name}: {key} = {value}"
    assert _run(name, steps=2) == first, f"{name}: two runs with the same seed differ"
    with _program(name) as module:  # same module twice: no state leaks between calls
        assert module.run(steps=2) == first
        assert module.run(steps=2) == first


@pytest.mark.parametrize("name", PROGRAMS)
def test_folder_layout(name):
    folder = CORPUS / name
    readme = (folder / "README.md").read_text()
    assert 2 <= len([line for line in readme.splitlines() if line.strip()]) <= 6
    assert not (folder / "__init__.py").exists()
    labelled = "# expect:" in "".join(p.read_text() for p in folder.glob("*.py"))
    assert labelled == (name != "negatives"), f"{name}: labels present={labelled}"
