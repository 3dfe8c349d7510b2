"""bench/real: each yardstick package's dependencies, read from its wheel's METADATA, pinned in a
lock, unpacked into a scratch site that `graphsafe check` searches (offline: fake wheels)."""

from __future__ import annotations

import importlib.util
import io
import os
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("real_score", ROOT / "bench" / "real" / "score.py")
score = importlib.util.module_from_spec(spec)
sys.modules["real_score"] = score  # dataclasses look their module up while the class is built
spec.loader.exec_module(score)
deps = score.deps  # the very module score uses (its DownloadFailed is the one caught)

METADATA = """\
Metadata-Version: 2.1
Name: pkg
Version: 1.0
Requires-Dist: gymnasium<2.0,>=0.29.1
Requires-Dist: torch>=2.0
Requires-Dist: torchvision
Requires-Dist: nvidia-cublas-cu12; platform_system == "Linux"
Requires-Dist: numpy>=1.20
Requires-Dist: scipy (>=1.4.0)
Requires-Dist: pytest; extra == "tests"
Requires-Dist: appnope; platform_system == "Darwin"
Requires-Dist: newer; python_version >= "3.11" and sys_platform == "linux"
Requires-Dist: older; python_version < "3.10"
Requires-Dist: onnx>=1.20; (platform_system == "Darwin" and python_version >= "3.13") and extra == "export"
Requires-Dist: extra-free[sub]>=1; (platform_machine == 'x86_64' or platform_machine == 'aarch64')
Requires-Dist: fromurl @ https://example.com/fromurl.whl
Requires-Dist: gymnasium>=0.1

Requires-Dist: in-the-description
"""


def test_requires_dist_keeps_what_a_linux_cpython_312_install_needs():
    assert deps.requirements(METADATA) == [
        ("gymnasium", "<2.0,>=0.29.1"), ("scipy", ">=1.4.0"), ("newer", ""), ("extra-free", ">=1")]


def test_requires_dist_leaves_out_torch_its_companions_and_the_vocabulary():
    names = {name for name, _ in deps.requirements(METADATA)}
    assert not names & {"torch", "torchvision", "nvidia-cublas-cu12", "numpy"}
    assert deps.skipped("torchaudio") and deps.skipped("nvidia-ml-py") and not deps.skipped("tqdm")


@pytest.mark.parametrize(("marker", "holds"), [
    ('python_version >= "3.11"', True),
    ('python_version > "3.12"', False),
    ('python_version ~= "3.10"', True),
    ("platform_system != 'Windows' and (extra == 'dev' or os_name == 'posix')", True),
    ('extra == "dev" or platform_machine == "arm64"', False),
    ('"linux" in sys_platform', True),
    ('platform_machine not in "x86_64 amd64"', False),
])
def test_environment_markers_are_evaluated_for_the_target(marker, holds):
    assert deps.marker_holds(marker) is holds


def test_an_unreadable_marker_is_an_error_and_its_requirement_is_left_out():
    with pytest.raises(ValueError, match="unknown marker variable"):
        deps.marker_holds('platform_flavour == "x"')
    assert deps.requirements("Name: p\nRequires-Dist: odd; platform_flavour == 'x'\nRequires-Dist: ok\n") == [("ok", "")]


def test_the_lock_round_trips_and_a_missing_lock_is_empty(tmp_path):
    lock = tmp_path / "deps.lock.json"
    assert deps.read_lock(lock) == {}
    pins = {"pkg": {"gymnasium": {"version": "1.4.0", "sha256": "ab" * 32}}, "other": {}}
    deps.write_lock(pins, lock)
    assert deps.read_lock(lock) == pins
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("content", ["{not json", '{"packages": {"pkg": {"dep": "1.0"}}}', "[]"])
def test_a_malformed_lock_stops_with_a_message(tmp_path, content):
    lock = tmp_path / "deps.lock.json"
    lock.write_text(content)
    with pytest.raises(SystemExit, match="not a dependency lock"):
        deps.read_lock(lock)


def test_the_committed_lock_pins_every_labelled_package_without_torch():
    """Labels waiting for their review (bench/real/pending/) are pinned too: they are scored early."""
    lock = deps.read_lock()
    labelled = set(score.load_labels(ROOT / "bench" / "real" / "labels"))
    pending = set(score.load_labels(ROOT / "bench" / "real" / "pending"))
    assert set(lock) == labelled | pending
    assert not any(deps.skipped(dep) for pins in lock.values() for dep in pins)


# ---- the scratch site and the check -------------------------------------------------------------

HAZARD = "def scalar(t):\n    return t.sum().item()\n"
PROJECT = """\
import torch
import fakedep


def step(x):
    y = x * 2
    return fakedep.scalar(y) + 1
"""


def fake_wheel(folder: Path) -> Path:
    """fakedep 1.0: its module (one through `.data/purelib`), metadata, and a compiled file and
    a script that are not source."""
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / "fakedep-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zipped:
        zipped.writestr("fakedep/__init__.py", HAZARD)
        zipped.writestr("fakedep/_native.cpython-312-x86_64-linux-gnu.so", b"\x7fELF")
        zipped.writestr("fakedep-1.0.data/purelib/fakedep_extra.py", "X = 1\n")
        zipped.writestr("fakedep-1.0.data/scripts/run-fakedep", "#!/bin/sh\n")
        zipped.writestr("fakedep-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: fakedep\nVersion: 1.0\n")
    return wheel


@pytest.fixture
def package(tmp_path, monkeypatch) -> tuple[object, Path]:
    root = tmp_path / "src"
    (root / "p").mkdir(parents=True)
    (root / "p" / "__init__.py").write_text("")
    (root / "p" / "m.py").write_text(PROJECT)
    (root / "pyproject.toml").write_text("")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("GRAPHSAFE_LIBRARY_PATH", raising=False)
    label = {"region": "p/m.py::step", "label": "positive", "kind": "sync", "path": "p/m.py", "line": 7}
    return score.Package("p", "1", "p-1-py3-none-any.whl", "0" * 64, [label]), root


def test_check_finds_a_hazard_inside_a_dependency_unpacked_into_the_scratch_site(tmp_path, package):
    pkg, root = package
    cache = tmp_path / "cache"
    wheel = fake_wheel(tmp_path / "wheels")
    fetched = []

    def download(name, version, sha256, folder):
        fetched.append((name, version, sha256))
        return wheel

    lock = {"p": {"fakedep": {"version": "1.0", "sha256": "cd" * 32}}}
    site, notes = score.dependency_site(pkg, cache, lock, refresh=False, download=download)
    assert site == cache / "deps" / "p" / "site" and notes == []
    assert fetched == [("fakedep", "1.0", "cd" * 32)]
    unpacked = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    assert unpacked == [".unpacked-from", "fakedep-1.0.dist-info/METADATA", "fakedep/__init__.py", "fakedep_extra.py"]

    assert score.dependency_site(pkg, cache, lock, refresh=False, download=download)[0] == site
    assert len(fetched) == 1  # unpacked once per lock entry

    with_deps = score.run_check(pkg, root, None, [], site=site)
    without = score.run_check(pkg, root, None, [])
    assert [(d["relpath"], d["location"]["row"], d["code"][:3]) for d in with_deps] == [("p/m.py", 7, "GS1")]
    assert "via fakedep/__init__.py:2 scalar" in with_deps[0]["message"]
    assert without == []


def test_a_dependency_that_cannot_be_downloaded_is_a_note_and_the_check_goes_on(tmp_path, package):
    pkg, root = package

    def offline(name, version, sha256, folder):
        raise deps.DownloadFailed(f"{name} {version}: pip could not download the archive (network unreachable)")

    lock = {"p": {"fakedep": {"version": "1.0", "sha256": "cd" * 32}}}
    site, notes = score.dependency_site(pkg, tmp_path / "cache", lock, refresh=False, download=offline)
    assert site is None
    assert notes[0].startswith("p: dependency fakedep 1.0 not fetched: fakedep 1.0: pip could not download")
    assert "checked without them" in notes[-1]
    assert score.run_check(pkg, root, None, [], site=site) == []


def test_a_package_that_cannot_be_resolved_is_checked_without_dependencies_and_not_locked(tmp_path, package,
                                                                                          monkeypatch):
    pkg, _ = package

    def unreachable(package, cache, depth=1):
        raise deps.DownloadFailed("p 1: pip could not download the archive pinned to sha256 000 (no network)")

    monkeypatch.setattr(score, "resolve_dependencies", unreachable)
    lock: dict = {}
    site, notes = score.dependency_site(pkg, tmp_path / "cache", lock, refresh=False,
                                        download=lambda *a: pytest.fail("nothing to download"))
    assert lock == {} and notes == ["p: dependency not resolved: p 1: pip could not download the archive pinned "
                                    "to sha256 000 (no network)"]
    assert site is None


def test_the_scratch_site_comes_first_on_the_library_path():
    env = deps.library_env(Path("/scratch/site"), {"GRAPHSAFE_LIBRARY_PATH": "/vendored", "HOME": "/h"})
    assert env["GRAPHSAFE_LIBRARY_PATH"] == os.pathsep.join(["/scratch/site", "/vendored"]) and env["HOME"] == "/h"
    assert deps.library_env(None, {"HOME": "/h"}) == {"HOME": "/h"}


def test_metadata_is_read_from_a_wheel_without_unpacking_it(tmp_path):
    wheel = fake_wheel(tmp_path)
    assert "Name: fakedep" in deps.archive_metadata(wheel)
    assert deps.archive_metadata(tmp_path / "missing.whl") == ""
    assert deps.requirements(deps.archive_metadata(wheel)) == []


def test_a_refresh_keeps_the_old_pin_of_a_dependency_it_could_not_resolve(tmp_path, package, monkeypatch):
    pkg, _ = package
    old = {"kept": {"version": "1.0", "sha256": "aa" * 32}, "moved": {"version": "1.0", "sha256": "bb" * 32}}
    new = {"moved": {"version": "2.0", "sha256": "cc" * 32}}
    monkeypatch.setattr(score, "resolve_dependencies",
                        lambda package, cache, depth=1: (dict(new), {"kept": "kept>=1: no wheel for the target (offline)"}))
    def offline(name, *args):
        raise deps.DownloadFailed(f"{name}: offline")

    lock = {"p": dict(old)}
    _, notes = score.dependency_site(pkg, tmp_path / "cache", lock, refresh=True, download=offline)
    assert lock == {"p": {"kept": old["kept"], "moved": new["moved"]}}
    assert notes[0] == "p: dependency not resolved: kept>=1: no wheel for the target (offline)"

    def unreachable(package, cache, depth=1):
        raise deps.DownloadFailed("p 1: pip could not download the archive (offline)")

    monkeypatch.setattr(score, "resolve_dependencies", unreachable)
    before = {"p": dict(old)}
    lock = {"p": dict(old)}
    score.dependency_site(pkg, tmp_path / "cache", lock, refresh=True, download=offline)
    assert lock == before  # an offline refresh changes nothing


def test_a_source_archive_without_requires_dist_is_read_through_its_egg_info_requires_txt(tmp_path):
    archive = tmp_path / "old-0.1.tar.gz"
    files = {
        "old-0.1/PKG-INFO": "Metadata-Version: 2.1\nName: old\nVersion: 0.1\nDescription: text\n"
                            "        Requires-Dist: in-the-description\n        \n        more\n",
        "old-0.1/old.egg-info/requires.txt": "numpy\neinops>=0.3\n\n[:python_version < \"3.8\"]\nbackport\n\n"
                                             "[:sys_platform == \"linux\"]\nlinux-only\n\n[dev]\nflake8\n",
    }
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert deps.requirements(deps.archive_metadata(archive)) == [("einops", ">=0.3"), ("linux-only", "")]
