"""GS601 on a draw whose `generator=` is a parameter: judged by what reached calls pass it
(analyzer/generators.py), across files and into libraries."""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphsafe.analyzer import libraries
from graphsafe.analyzer.engine import check_paths
from graphsafe.config import Settings

NOISE = """\
import torch


def add_noise(x, generator=None):
    return x + torch.randn(x.shape, generator=generator, device=x.device)
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))


def _gs601(tmp_path: Path, files: dict[str, str], region: str = "step.py::step", library: str | None = None,
           monkeypatch=None) -> set[tuple[str, int]]:
    root = tmp_path / "proj"
    _write(root, files)
    if library is not None:
        site = tmp_path / "site"
        _write(site, {"fakelib/__init__.py": library,
                      "fakelib-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: fakelib\nVersion: 1.0\n\nbody\n"})
        monkeypatch.setenv(libraries.LIBRARY_PATH_ENV, str(site))
    result = check_paths([root], Settings(root=root, regions=(region,)), use_cache=False, jobs=1)
    return {(Path(d.path).name, d.start.line) for d in result.diagnostics if d.code == "GS601"}


STEP_WITH_GEN = """\
import torch
from noise import add_noise

gen = torch.Generator(device="cuda")


def step(x):
    return add_noise(x, generator=gen)
"""


def test_a_generator_built_in_another_file_reaches_the_helpers_draw(tmp_path):
    found = _gs601(tmp_path, {"noise.py": NOISE, "step.py": STEP_WITH_GEN})
    assert ("noise.py", 5) in found


def test_a_helper_called_without_a_generator_draws_from_the_default_one(tmp_path):
    step = "from noise import add_noise\n\ndef step(x):\n    return add_noise(x)\n"
    assert _gs601(tmp_path, {"noise.py": NOISE, "step.py": step}) == set()


def test_a_helper_given_none_draws_from_the_default_one(tmp_path):
    step = "from noise import add_noise\n\ndef step(x):\n    return add_noise(x, generator=None)\n"
    assert _gs601(tmp_path, {"noise.py": NOISE, "step.py": step}) == set()


def test_a_generator_kept_by_a_sampler_and_handed_on_reaches_the_draw(tmp_path):
    sampler = """\
    import torch
    from noise import add_noise


    class Sampler:
        def __init__(self):
            self.gen = torch.Generator(device="cuda")

        def sample(self, x, generator=None):
            return add_noise(x, generator=generator)

        def step(self, x):
            return self.sample(x, generator=self.gen)
    """
    found = _gs601(tmp_path, {"noise.py": NOISE, "step.py": sampler}, region="step.py::Sampler.step")
    assert ("noise.py", 5) in found


def test_a_generator_the_region_root_receives_may_be_a_cuda_one(tmp_path):
    step = "from noise import add_noise\n\ndef step(x, generator=None):\n    return add_noise(x, generator=generator)\n"
    assert ("noise.py", 5) in _gs601(tmp_path, {"noise.py": NOISE, "step.py": step})


def test_a_library_helper_given_a_project_generator_is_reported(tmp_path, monkeypatch):
    # passed by position: the call itself names no `generator=` keyword
    step = STEP_WITH_GEN.replace("from noise import", "from fakelib import").replace("generator=gen", "gen")
    found = _gs601(tmp_path, {"step.py": step}, library=NOISE, monkeypatch=monkeypatch)
    assert found == {("step.py", 8)}  # at the project's call line: the way into the library


def test_a_library_helper_called_without_a_generator_is_not_reported(tmp_path, monkeypatch):
    step = "from fakelib import add_noise\n\ndef step(x):\n    return add_noise(x)\n"
    assert _gs601(tmp_path, {"step.py": step}, library=NOISE, monkeypatch=monkeypatch) == set()


def test_a_generator_its_file_registers_with_the_graph_is_not_reported_through_a_helper(tmp_path):
    step = STEP_WITH_GEN.replace("def step", "graph = torch.cuda.CUDAGraph()\ngraph.register_generator_state(gen)\n\n\ndef step")
    assert _gs601(tmp_path, {"noise.py": NOISE, "step.py": step}) == set()
