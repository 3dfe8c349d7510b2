"""Argument validation off while the core is captured, on in eager calls
(rewriters/validation_capture.py): the rewrite on a small synthetic package, when it is not
applied, and a CPU test that eager calls still validate while a simulated capture does not, with
every switch put back afterwards."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from graphsafe.rewriters.validation_capture import HELPER, validation_off_while_capturing, wrap_core_file

CORE = textwrap.dedent('''\
    import torch

    from pkg import util


    class Inference:
        def step(self, loc, scale):
            return float(self.step_core(loc, scale))

        def step_core(self, loc, scale):
            """The loss."""
            # a distribution built inside the core validates its arguments
            d = torch.distributions.Normal(loc, scale)
            seen = util.is_validation_enabled()
            return -d.log_prob(loc).sum() + 0 * seen
''')

SWITCH = textwrap.dedent('''\
    _VALIDATION_ENABLED = True


    def enable_validation(flag):
        global _VALIDATION_ENABLED
        _VALIDATION_ENABLED = flag


    def is_validation_enabled():
        return _VALIDATION_ENABLED
''')


def package(tmp_path: Path) -> tuple[Path, list[Path]]:
    (tmp_path / "pkg").mkdir()
    files = {"pkg/__init__.py": "", "pkg/util.py": SWITCH, "pkg/infer.py": CORE}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path / "pkg/infer.py", [tmp_path / name for name in files]


def test_core_body_runs_under_the_helper_with_the_package_switch(tmp_path):
    core, paths = package(tmp_path)
    note = wrap_core_file(core, "Inference.step_core", paths)
    text = core.read_text()
    assert '        """The loss."""\n        # a distribution built' in text  # docstring and comment kept above
    assert f"        with {HELPER}():\n            d = torch.distributions.Normal(loc, scale)\n" in text
    assert "import pkg.util as switch_0" in text and f"class {HELPER}:" in text
    assert "    def step(self, loc, scale):\n        return float(self.step_core(loc, scale))\n" in text
    assert "pkg.util.enable_validation" in note and "graphed()'s warm-up" in note


def test_nothing_is_done_when_no_file_uses_torch_distributions(tmp_path):
    core, paths = package(tmp_path)
    core.write_text(CORE.replace("torch.distributions.Normal(loc, scale)", "loc * scale"))
    before = core.read_text()
    assert wrap_core_file(core, "Inference.step_core", paths) is None
    assert core.read_text() == before


def test_a_generator_core_is_refused_with_why():
    source = "import torch\n\n\ndef core(x):\n    yield torch.distributions.Normal(x, 1.0)\n"
    new, why = validation_off_while_capturing(source, "core", [])
    assert new is None and "generator" in why


def test_eager_calls_validate_and_a_simulated_capture_does_not_and_switches_come_back(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    core, paths = package(tmp_path)
    original = CORE
    wrap_core_file(core, "Inference.step_core", paths)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
        monkeypatch.delitem(sys.modules, name)
    import pkg.infer
    import pkg.util

    namespace: dict = {}
    exec(compile(original, "orig.py", "exec"), namespace)
    loc, scale = torch.tensor([0.5, -1.0]), torch.tensor([1.0, 2.0])
    monkeypatch.setattr(torch.distributions.Distribution, "_validate_args", True)
    assert torch.equal(pkg.infer.Inference().step_core(loc, scale), namespace["Inference"]().step_core(loc, scale))
    with pytest.raises(ValueError):  # eager: a negative scale is still refused
        pkg.infer.Inference().step_core(loc, -scale)
    with monkeypatch.context() as patch:
        patch.setattr(torch.cuda, "is_available", lambda: True)
        patch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
        pkg.infer.Inference().step_core(loc, -scale)  # while capturing: no host check, no error
    assert torch.distributions.Distribution._validate_args is True and pkg.util.is_validation_enabled() is True


def test_graph_names_the_package_switch_by_its_import_path(tmp_path, capsys):
    """graph works in a scratch copy whose folder is no package name: the switch's module is
    named from the user's tree (`pkg.util`, not the scratch folder's)."""
    import json

    from tests.helpers import run_cli

    core, _ = package(tmp_path)
    code, out, err = run_cli(capsys, "graph", str(tmp_path / "pkg"), "--region", "Inference.step", "--no-cache",
                             "--json")
    notes = " ".join(json.loads(out)["notes"])
    assert "torch.distributions, pkg.util.enable_validation" in notes, notes
    assert "import pkg.util as switch_0" in core.read_text()
