"""Calls from a region into installed libraries: followed into their source, hazards said at the
project's calling line, cached per package version, one note per package not installed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphsafe.analyzer import libraries
from graphsafe.analyzer.engine import check_paths
from graphsafe.config import Settings
from tests.helpers import run_cli

DRAWS = """\
import torch

_gen = torch.Generator(device="cuda")


def noisy(shape):
    return torch.randn(shape, generator=_gen, device="cuda")


def scalar(t):
    return t.sum().item()


def outer(t):
    return scalar(t) + 1


# graphsafe: region
def never_called(t):
    return t.nonzero()
"""

TRAIN = """\
import torch
import fakelib
from fakelib.draws import scalar, outer
import missingpkg


# graphsafe: region
def step(x):
    y = fakelib.noisy(x.shape)
    s = scalar(y)
    missingpkg.helper(x)
    missingpkg.other(x)
    return y * s + outer(y)
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    """A site-packages of its own holding `fakelib` 1.2.3, on GRAPHSAFE_LIBRARY_PATH."""
    site = tmp_path / "site"
    _write(site, {
        "fakelib/__init__.py": "from .draws import noisy\n",
        "fakelib/draws.py": DRAWS,
        "fakelib/unused.py": "def f(t):\n    return t.item()\n",
        "fakelib-1.2.3.dist-info/METADATA": "Metadata-Version: 2.1\nName: fakelib\nVersion: 1.2.3\n\nbody\n",
    })
    monkeypatch.setenv(libraries.LIBRARY_PATH_ENV, str(site))
    return site


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "proj"
    _write(root, {"train.py": TRAIN})
    monkeypatch.chdir(root)
    return root


def _check(project: Path, **settings):
    return check_paths([project], Settings(root=project, **settings), use_cache=False, jobs=1)


def test_library_hazards_are_reported_at_the_project_call_line_with_the_way_in(site, project):
    found = {(Path(d.path).name, d.start.line, d.code): d for d in _check(project).diagnostics}
    assert set(found) == {("train.py", 9, "GS601"), ("train.py", 10, "GS101"), ("train.py", 13, "GS101")}
    assert found["train.py", 10, "GS101"].message.endswith("(via fakelib/draws.py:11 scalar)")
    # a re-export in the package's __init__.py is followed to the defining file
    assert found["train.py", 9, "GS601"].message.endswith("(via fakelib/draws.py:7 noisy)")
    # each project call leads in on its own, through library functions calling each other
    assert found["train.py", 13, "GS101"].message.endswith("(via fakelib/draws.py:15 outer → fakelib/draws.py:11 scalar)")
    assert found["train.py", 10, "GS101"].chain == ("step",)
    assert found["train.py", 10, "GS101"].start.column == 4  # the call line's text, not column 0


def test_nothing_is_reported_inside_a_library_file_and_no_fix_is_offered(site, project):
    diagnostics = _check(project, regions=("*",)).diagnostics
    assert diagnostics
    assert all(Path(d.path).resolve().parent == project.resolve() for d in diagnostics)
    assert all(d.fix is None for d in diagnostics if "(via " in d.message)


def test_library_functions_are_not_regions(site, project):
    """A `# graphsafe: region` comment or `--region '*'` makes no region of a library function:
    `never_called`'s nonzero (GS1xx) is not reported anywhere."""
    result = _check(project, regions=("*",))
    assert all(site.resolve() not in Path(r.path).resolve().parents for r in result.regions)
    assert not any("never_called" in d.message or "nonzero" in d.message for d in result.diagnostics)


def test_a_package_not_installed_gets_one_note(site, project):
    result = _check(project)
    assert result.notes == ["not followed: `missingpkg` is not installed (calls into it were not analysed)"]


def test_only_the_library_files_a_region_reaches_are_parsed(site, project, monkeypatch):
    parsed = []
    analyze = libraries.analyze_bytes

    def counting(path, *args, **kwargs):
        parsed.append(Path(path).name)
        return analyze(path, *args, **kwargs)

    monkeypatch.setattr(libraries, "analyze_bytes", counting)
    _check(project)
    assert sorted(parsed) == ["__init__.py", "draws.py"]


def test_library_facts_are_cached_per_package_version(site, project, tmp_path, monkeypatch):
    parsed = []
    analyze = libraries.analyze_bytes
    monkeypatch.setattr(libraries, "analyze_bytes", lambda path, *a, **k: parsed.append(path) or analyze(path, *a, **k))
    settings = Settings(root=project)
    first = check_paths([project], settings, cache_dir=tmp_path / "cache", jobs=1)
    assert len(parsed) == 2
    monkeypatch.setattr(libraries, "_SEEN", {})  # what this process has read: only the disk cache is left
    again = check_paths([project], settings, cache_dir=tmp_path / "cache", jobs=1)
    assert len(parsed) == 2 and [d.message for d in again.diagnostics] == [d.message for d in first.diagnostics]
    info = site / "fakelib-1.2.3.dist-info"
    info.rename(site / "fakelib-1.2.4.dist-info")
    (site / "fakelib-1.2.4.dist-info/METADATA").write_text("Metadata-Version: 2.1\nName: fakelib\nVersion: 1.2.4\n")
    monkeypatch.setattr(libraries, "_SEEN", {})
    check_paths([project], settings, cache_dir=tmp_path / "cache", jobs=1)
    assert len(parsed) == 4  # a new version: both files read again


def test_following_can_be_turned_off(site, project, capsys):
    assert [d for d in _check(project, follow_libraries=False).diagnostics if "(via " in d.message] == []
    assert _check(project, follow_libraries=False).notes == []
    code, out, err = run_cli(capsys, "check", ".", "--no-cache", "--no-follow-libraries", "--output-format", "concise")
    assert code == 0 and "GS101" not in out and "not installed" not in err
    (project / "pyproject.toml").write_text("[tool.graphsafe]\nfollow-libraries = false\n")
    code, out, _ = run_cli(capsys, "check", ".", "--no-cache", "--output-format", "concise")
    assert code == 0 and "GS101" not in out
    code, out, err = run_cli(capsys, "check", ".", "--no-cache", "--follow-libraries", "--output-format", "concise")
    assert code == 1 and "train.py:10:5: GS101" in out and err.count("not installed") == 1


def test_library_hazards_stay_reported_after_fix_rewrites_the_calling_file(site, project, capsys):
    (project / "train.py").write_text(TRAIN.replace("    y = fakelib.noisy(x.shape)\n", """\
    with torch.autocast("cuda"):
        g = torch.cuda.make_graphed_callables(fakelib.noisy, (x,))
    y = fakelib.noisy(x.shape)
"""))
    code, out, _ = run_cli(capsys, "check", ".", "--no-cache", "--fix", "--output-format", "concise")
    assert "cache_enabled=False" in (project / "train.py").read_text()  # the fix was written
    assert code == 1 and "train.py:12:5: GS101" in out and "(via fakelib/draws.py:11 scalar)" in out


def test_a_noqa_on_the_project_line_holds_back_a_library_hazard(site, project):
    (project / "train.py").write_text(TRAIN.replace("s = scalar(y)", "s = scalar(y)  # noqa: GS101"))
    lines = {(d.start.line, d.code) for d in _check(project).diagnostics}
    assert (10, "GS101") not in lines and (13, "GS101") in lines


def test_a_bad_follow_libraries_value_is_a_clear_error(site, project, capsys):
    (project / "pyproject.toml").write_text('[tool.graphsafe]\nfollow-libraries = "no"\n')
    code, _, err = run_cli(capsys, "check", ".", "--no-cache")
    assert code == 2 and "follow-libraries must be true or false" in err and "Traceback" not in err


def test_search_path_is_the_env_then_site_packages_without_the_stdlib(tmp_path, monkeypatch):
    monkeypatch.setenv(libraries.LIBRARY_PATH_ENV, str(tmp_path))
    found = libraries.search_path()
    assert found[0] == tmp_path
    assert all(p.name in ("site-packages", "dist-packages") for p in found[1:])


def test_following_a_library_imports_nothing(site, project):
    """The library is read, never imported: an `__init__.py` that fails on import is followed
    all the same, and torch stays out of sys.modules."""
    (site / "fakelib/__init__.py").write_text("raise RuntimeError('imported')\nfrom .draws import noisy\n")
    probe = (
        "import sys\n"
        "from graphsafe.cli import main\n"
        "code = main(['check', '.', '--no-cache', '--quiet', '--output-format', 'concise'])\n"
        "assert 'torch' not in sys.modules and 'fakelib' not in sys.modules, 'imported'\n"
        "print('ok', code)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), str(site)])}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=project, env=env)
    assert result.stdout.strip().splitlines()[-1] == "ok 1", result.stderr
    assert "train.py:10:5: GS101" in result.stdout


def test_a_namespace_package_is_followed(site, project):
    _write(site, {"nsroot/inner/ops.py": "def sync(t):\n    return t.cpu()\n"})
    (project / "train.py").write_text(
        "from nsroot.inner.ops import sync\n\n\n# graphsafe: region\ndef step(x):\n    return sync(x)\n")
    result = _check(project)
    assert [(d.start.line, d.message.rpartition("(via ")[2]) for d in result.diagnostics] == \
        [(6, "nsroot/inner/ops.py:2 sync)")]
    assert result.notes == []


def test_a_library_file_that_does_not_parse_is_skipped_quietly(site, project):
    (site / "fakelib/draws.py").write_text("def scalar(t:\n    return t.item()\n")
    result = _check(project)
    assert not any("(via " in d.message for d in result.diagnostics)
    assert all(Path(d.path).name == "train.py" for d in result.diagnostics)


def test_following_stops_at_the_file_bound_and_says_so(site, project, monkeypatch):
    monkeypatch.setattr(libraries, "MAX_FILES", 1)  # fakelib/__init__.py only: draws.py is past the bound
    result = _check(project)
    assert any("up to 1 files" in note for note in result.notes)
    assert not any("(via " in d.message for d in result.diagnostics)


def test_a_tensor_a_library_function_returns_is_a_tensor_in_the_project(site, project, capsys):
    _write(site, {"retlib/__init__.py": """\
        import torch


        def make(x):
            return torch.zeros(3, device=x.device)
        """})
    (project / "train.py").write_text(textwrap.dedent("""\
        from retlib import make


        # graphsafe: region
        def step(x):
            y = make(x)
            if y.sum() > 0:
                x = x + 1
            return x
        """))
    assert [(d.start.line, d.code) for d in _check(project).diagnostics] == [(7, "GS201")]
    assert _check(project, follow_libraries=False).diagnostics == []
    # the same for one buffer (stdin, `fix`'s re-checks)
    from graphsafe.analyzer.engine import check_source

    text = (project / "train.py").read_text()
    assert [(d.start.line, d.code) for d in check_source(text, "train.py", Settings(root=project)).diagnostics] \
        == [(7, "GS201")]


NOT_PACKAGES = """\
import torch
import missingpkg

if torch.cuda.is_available():
    Base = torch.nn.Module
else:
    Base = object


class Holder(object):
    def __init__(self):
        object.__setattr__(self, "x", 1)


class Net(Base):
    def forward(self, x):
        return x * 2


# graphsafe: region
def step(x):
    Holder()
    missingpkg.helper(x)
    return Net().forward(x)
"""


def test_builtins_and_bare_local_names_are_not_noted_as_packages_not_installed(site, tmp_path, monkeypatch):
    """`object`, `object.__setattr__` and a base class bound by a module-level `if` are names the
    call graph does not resolve, but no package: only `missingpkg` is noted."""
    root = tmp_path / "proj2"
    _write(root, {"net.py": NOT_PACKAGES})
    monkeypatch.chdir(root)
    assert _check(root).notes == ["not followed: `missingpkg` is not installed (calls into it were not analysed)"]


STORES = """\
import os


class Store:
    def clone(self):
        return self._clone()

    def _clone(self):
        return Store()

    def compute(self, x):
        return self.reduce(x)

    def reduce(self, x):
        raise NotImplementedError


class DiskStore(Store):
    def _clone(self):
        os.makedirs("/tmp/store")
        return DiskStore()
"""


def test_a_library_base_method_runs_its_own_helper_and_the_projects_overrides_not_the_librarys_others(
        site, tmp_path, monkeypatch):
    """`store.clone()` on a library base class: its own `_clone`, not a disk-backed subclass's
    (every backend of a large library would be reported); a project subclass's override of a
    method the library calls on `self` still runs."""
    _write(site, {"storelib/__init__.py": STORES})
    root = tmp_path / "proj3"
    _write(root, {"train.py": """\
        import storelib


        class Summed(storelib.Store):
            def reduce(self, x):
                return x.sum().item()


        # graphsafe: region
        def step(store: storelib.Store, summed: Summed, x):
            copy = store.clone()
            return copy, summed.compute(x)
        """})
    monkeypatch.chdir(root)
    found = {(d.start.line, d.code) for d in _check(root).diagnostics}
    assert (11, "GS504") not in found
    assert (6, "GS101") in found
