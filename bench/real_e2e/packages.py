"""The pinned archives a real step needs: download (hash checked), unpack, install beside it.

Each step's PACKAGE is pinned in bench/real/labels (version, archive name, sha256), its EXTRA
in the step module. `prepare` downloads them for the GPU machine's interpreter (Python 3.12,
manylinux x86_64) so that the machine, which has no network, gets them carried; on the CPU
side the same archives (and CPU_DEPS, what the GPU image has but the CPU venv lacks) are
downloaded for this interpreter at run time.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.real import score  # noqa: E402
from bench.real_e2e.step_api import StepInfo  # noqa: E402

# The GPU image: Python 3.12 on manylinux x86_64 (pip also takes older manylinux tags under this one).
# The GPU image's Python; binary wheels are tagged with one manylinux level or another (kornia-rs
# and wcwidth: manylinux_2_17/2014 only), and pip matches each level exactly.
GPU_PIP_OPTIONS = ("--python-version", "3.12", "--implementation", "cp",
                   "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                   "--platform", "manylinux2014_x86_64")

# In the GPU image, missing from the CPU venv (torch 2.13 CPU, Python 3.11): cp311 wheels of
# numpy and scipy, and the pure-Python packages steps import (pyro: opt-einsum, tqdm; gpytorch:
# linear-operator, jaxtyping, wadler-lindig; stable-baselines3: cloudpickle).
CPU_DEPS = (
    ("numpy", "2.3.5", "8cba086a43d54ca804ce711b2a940b16e452807acebe7852ff327f1ecd49b0d4"),
    ("scipy", "1.16.3", "0151a0749efeaaab78711c78422d413c583b8cdd2011a3c1d6c794938ee9fdb2"),
    ("opt-einsum", "3.4.0", "69bb92469f86a1565195ece4ac0323943e83477171b91d24c35afe028a90d7cd"),
    ("tqdm", "4.67.1", "26445eca388f82e72884e0d580d5464cd801a3ea01e63e5601bdff9ba6a48de2"),
    ("cloudpickle", "3.1.2", "9acb47f6afd73f60dc1df93bb801b472f05ff42fa6c84167d25cb206be1fbf4a"),
    ("linear-operator", "0.6.1", "a5981c1fcda08df3a210dffb6e8019b4751f4afaf3ffc822c24eaaf56b11eed9"),
    ("jaxtyping", "0.3.11", "8a4bedc4e3f963fa82df41bd13c7ebc2bad925601eb48614c65798f21329d4e3"),
    ("wadler-lindig", "0.1.8", "8671e8c98449ae3f4e4ba720eccd63a502b3983042f8d112b49a9c6be49e8d92"),
)


class PackageError(Exception):
    """An archive cannot be had or installed: a message for the step's row."""


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    sha256: str
    sdist: bool = False
    archive_name: str | None = None  # known for labelled packages, not for EXTRA


def package_pin(name: str) -> Pin:
    packages = score.load_labels(score.HERE / "labels")
    if name not in packages:
        raise PackageError(f"{name} is not pinned in bench/real/labels")
    package = packages[name]
    return Pin(package.name, package.version, package.sha256, package.wheel.endswith(".tar.gz"), package.wheel)


# Binary EXTRA wheels pinned for the GPU image's cp312, and their cp311 build for this machine's
# CPU runs (name, version, cp312 sha256) → cp311 sha256.
CPU_BUILDS = {
    ("kornia-rs", "0.2.0", "a5ccc43e7b54a845c4250dee107b62d221b4a76f6812a8041196784f4add342a"):
        "82833277685b31e9ae1a2e9ecd00a28646463a05c0ea8b72e3ddb329699f8d16",
}


def pins_of(info: StepInfo, for_cpu: bool = False) -> list[Pin]:
    """The step's package first, then its EXTRA (with `for_cpu`, binary wheels in this
    interpreter's build, CPU_BUILDS)."""
    extra = [Pin(n, v, CPU_BUILDS.get((n, v, h), h) if for_cpu else h) for n, v, h in info.extra]
    return [package_pin(info.package), *extra]


def fetch(pin: Pin, archives: Path, pip_options: tuple[str, ...] = ()) -> Path:
    """The pinned archive, from `archives` or downloaded into it."""
    try:
        path = score.download_pinned(pin.name, pin.version, pin.sha256, archives, sdist=pin.sdist,
                                     pip_options=pip_options)
    except SystemExit as error:  # score.py's way of saying it; here it is one step's failure
        raise PackageError(str(error)) from None
    if pin.archive_name and path.name != pin.archive_name:
        raise PackageError(f"{pin.name}: {path.name} has the pinned hash but the labels name {pin.archive_name}")
    return path


def prepare(infos: list[StepInfo], archives: Path, pip_options: tuple[str, ...] = GPU_PIP_OPTIONS) -> list[str]:
    """Download every step's archives into `archives`; the problems, one line each."""
    problems = []
    seen: set[str] = set()
    for info in infos:
        for pin in pins_of(info):
            if pin.sha256 in seen:
                continue
            seen.add(pin.sha256)
            try:
                path = fetch(pin, archives, pip_options)
                print(f"[prepare] {info.name}: {path.name}", file=sys.stderr)
            except PackageError as error:
                problems.append(f"{info.name}: {error}")
    return problems


def unpack(pin: Pin, archive: Path, dest: Path) -> None:
    """The package's source tree (the wheel's contents, or an sdist's top folder) at `dest`, with an
    empty pyproject.toml so that graphsafe reads no configuration from above it."""
    staging = dest.with_name(dest.name + ".unpacking")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if pin.sdist:
        with tarfile.open(archive) as tar:
            tar.extractall(staging, filter="data")
        tops = [p for p in staging.iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise PackageError(f"{archive.name}: expected one top folder, found {len(tops)}")
        root = tops[0]
    else:
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(staging)
        root = staging
    (root / "pyproject.toml").write_text("")
    shutil.rmtree(dest, ignore_errors=True)
    root.rename(dest)
    shutil.rmtree(staging, ignore_errors=True)


def install(archives: list[Path], target: Path) -> None:
    """pip install --target, no index, no dependencies; once per set of archives (a stamp says which)."""
    stamp = target / ".installed-from"
    wanted = "\n".join(sorted(a.name for a in archives))
    if stamp.is_file() and stamp.read_text() == wanted:
        return
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    if archives:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                               "--disable-pip-version-check", "--target", str(target), *map(str, archives)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise PackageError(f"pip install --target {target} failed: {done.stderr.strip()[-800:]}")
    stamp.write_text(wanted)
