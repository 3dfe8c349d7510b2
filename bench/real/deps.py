"""Each yardstick package's own dependencies, unpacked (never installed, never run) into a scratch
site that `graphsafe check` searches through GRAPHSAFE_LIBRARY_PATH, so that following calls into
installed libraries is measured as users get it (their dependencies are installed).

    python bench/real/deps.py               # resolve the lock for every pinned package (network)
    python bench/real/deps.py --depth 2     # ... with the dependencies' own dependencies too

The dependencies are read from the pinned wheel's METADATA `Requires-Dist` as a Linux x86-64
CPython 3.12 install would see them: extras-only and environment-marker-false requirements are
left out, and so are torch and its binary companions (the rules' vocabulary, and huge). Each one is
chosen once, at the newest version pip offers that fits (a wheel: pure Python or manylinux cp312),
and recorded with its sha256 in deps.lock.json; later runs download exactly that wheel.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCK = HERE / "deps.lock.json"

# torch's own packages are what the rules name (the analyzer never walks them) and weigh gigabytes;
# numpy is the analyzer's vocabulary as well (graphsafe/analyzer/libraries.py VOCABULARY).
SKIPPED = ("torch", "torchvision", "torchaudio", "triton", "numpy")
SKIPPED_PREFIXES = ("nvidia-",)

# The install the dependencies are chosen for: what PEP 508 markers see, and pip's wheel tags.
TARGET = {"python_version": "3.12", "python_full_version": "3.12.0", "os_name": "posix", "sys_platform": "linux",
          "platform_system": "Linux", "platform_machine": "x86_64", "platform_release": "",
          "implementation_name": "cpython", "platform_python_implementation": "CPython",
          "implementation_version": "3.12.0", "extra": ""}
PIP_TARGET = ("--python-version", "3.12", "--implementation", "cp", "--abi", "cp312", "--abi", "abi3", "--abi", "none",
              *(arg for tag in ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64",
                                "manylinux_2_28_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64")
                for arg in ("--platform", tag)))
# A slow or missing network costs seconds per dependency, not pip's default minutes.
PIP_PATIENCE = ("--timeout", "20", "--retries", "1")

Downloader = Callable[[str, str, str, Path], Path]  # (name, version, sha256, folder) → archive


class DownloadFailed(SystemExit):
    """pip could not produce the archive (no network, no such wheel): for a package's own wheel
    the run stops with this message; for one of its dependencies it is a note."""


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def skipped(name: str) -> bool:
    return normal(name) in SKIPPED or normal(name).startswith(SKIPPED_PREFIXES)


# ---- Requires-Dist ------------------------------------------------------------------------------

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")


def requirements(metadata: str, env: dict[str, str] = TARGET) -> list[tuple[str, str]]:
    """(name, version specifier) of each `Requires-Dist` of a METADATA (or PKG-INFO) text that
    holds on `env` with no extra asked for, torch's packages left out; in order, once each."""
    wanted: dict[str, tuple[str, str]] = {}
    for line in metadata.splitlines():
        if not line:
            break  # the headers end at the first empty line; the description follows
        key, _, value = line.partition(":")
        if line[:1].isspace() or key.lower() != "requires-dist":  # an indented line continues a header
            continue
        requirement, _, marker = value.partition(";")
        found = _REQUIREMENT.match(requirement)
        if not found or "@" in found.group(3):  # a direct URL is not an index version to pin
            continue
        name, specifier = found.group(1), found.group(3).strip().strip("()").replace(" ", "")
        try:
            holds = not marker.strip() or marker_holds(marker, env)
        except ValueError:
            holds = False  # a marker this cannot read: not guessed into the site
        if skipped(name) or not holds:
            continue
        wanted.setdefault(normal(name), (name, specifier))
    return list(wanted.values())


_TOKEN = re.compile(r"""\s*(\(|\)|===|==|!=|<=|>=|~=|<|>|not\s+in\b|in\b|and\b|or\b|'[^']*'|"[^"]*"|[A-Za-z_][\w.]*)""")


def marker_holds(marker: str, env: dict[str, str] = TARGET) -> bool:
    """A PEP 508 environment marker evaluated on `env` (`and`, `or`, parentheses, comparisons;
    versions compared number by number). A marker this cannot read raises ValueError."""
    tokens, position = [], 0
    text = marker.strip()
    while position < len(text):
        found = _TOKEN.match(text, position)
        if not found:
            raise ValueError(f"unreadable marker: {marker!r}")
        tokens.append(re.sub(r"\s+", " ", found.group(1)))
        position = found.end()
        while position < len(text) and text[position].isspace():
            position += 1
    at = 0

    def take() -> str:
        nonlocal at
        if at >= len(tokens):
            raise ValueError(f"unreadable marker: {marker!r}")
        at += 1
        return tokens[at - 1]

    def either() -> bool:
        value = both()
        while at < len(tokens) and tokens[at] == "or":
            take()
            value = both() or value  # evaluate the right side always: a bad marker must raise
        return value

    def both() -> bool:
        value = atom()
        while at < len(tokens) and tokens[at] == "and":
            take()
            value = atom() and value
        return value

    def atom() -> bool:
        if tokens[at:at + 1] == ["("]:
            take()
            value = either()
            if take() != ")":
                raise ValueError(f"unreadable marker: {marker!r}")
            return value
        left, op, right = operand(take()), take(), operand(take())
        return _compare(left, op, right, marker)

    def operand(token: str) -> str:
        if token[:1] in "'\"":
            return token[1:-1]
        if token not in env:
            raise ValueError(f"unknown marker variable {token!r} in {marker!r}")
        return env[token]

    value = either()
    if at != len(tokens):
        raise ValueError(f"unreadable marker: {marker!r}")
    return value


def _compare(left: str, op: str, right: str, marker: str) -> bool:
    if op == "in":
        return left in right
    if op == "not in":
        return left not in right
    if op in ("==", "===", "!="):
        same = left == right or (_version(left) is not None and _version(left) == _version(right))
        return same if op != "!=" else not same
    a, b = _version(left), _version(right)
    if a is None or b is None:
        raise ValueError(f"cannot order {left!r} and {right!r} in {marker!r}")
    width = max(len(a), len(b))
    a, b = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "~=": a >= b and a[:len(_version(right)) - 1] == b[:len(_version(right)) - 1]}[op]


def _version(text: str) -> tuple[int, ...] | None:
    return tuple(int(p) for p in text.split(".")) if re.fullmatch(r"\d+(\.\d+)*", text) else None


def archive_metadata(archive: Path) -> str:
    """The METADATA of a wheel; a source archive's PKG-INFO, with its `*.egg-info/requires.txt`
    as `Requires-Dist` headers where PKG-INFO has none (older setuptools wrote them only there);
    "" when it has none."""
    try:
        if archive.name.endswith(".whl"):
            with zipfile.ZipFile(archive) as zipped:
                name = next((n for n in zipped.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
                return zipped.read(name).decode("utf-8", "replace") if name else ""
        with tarfile.open(archive) as tar:
            texts = {}
            for member in tar.getmembers():
                if re.fullmatch(r"[^/]+/(PKG-INFO|[^/]+\.egg-info/requires\.txt)", member.name) and member.isfile():
                    texts[member.name.rsplit("/", 1)[1]] = tar.extractfile(member).read().decode("utf-8", "replace")
    except (OSError, zipfile.BadZipFile, tarfile.TarError):
        return ""
    headers = texts.get("PKG-INFO", "").split("\n\n", 1)[0]
    if re.search(r"^Requires-Dist:", headers, re.MULTILINE) or "requires.txt" not in texts:
        return headers
    return headers.rstrip("\n") + "\n" + requires_txt_as_headers(texts["requires.txt"])


def requires_txt_as_headers(text: str) -> str:
    """setuptools' requires.txt (`[extra]`, `[:marker]`, `[extra:marker]` sections) as Requires-Dist lines."""
    lines, marker = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        section = re.fullmatch(r"\[([^:\]]*)(?::(.*))?\]", line)
        if section:
            extra, condition = section.group(1).strip(), (section.group(2) or "").strip()
            parts = [f"({condition})"] if condition else []
            parts += [f'extra == "{extra}"'] if extra else []
            marker = " and ".join(parts)
            continue
        lines.append(f"Requires-Dist: {line}" + (f"; {marker}" if marker else ""))
    return "".join(f"{line}\n" for line in lines)


# ---- the lock -----------------------------------------------------------------------------------

def read_lock(path: Path = LOCK) -> dict[str, dict[str, dict[str, str]]]:
    """package → {dependency: {"version", "sha256"}}; empty when the file is missing. A file
    that is not such a table stops the run with a message."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise SystemExit(f"{path}: not a dependency lock ({error})") from None
    packages = data.get("packages") if isinstance(data, dict) else None
    if not isinstance(packages, dict) or not all(
            isinstance(deps, dict) and all(isinstance(pin, dict) and {"version", "sha256"} <= set(pin)
                                           for pin in deps.values()) for deps in packages.values()):
        raise SystemExit(f"{path}: not a dependency lock (want {{\"packages\": {{package: {{dep: {{version, sha256}}}}}}}})")
    return packages


def write_lock(packages: dict[str, dict[str, dict[str, str]]], path: Path = LOCK) -> None:
    data = {"note": "Each yardstick package's dependencies as bench/real/deps.py resolved them once "
                    "(Linux x86-64, CPython 3.12, wheels only); refresh with score.py --resolve-deps.",
            "packages": {name: dict(sorted(deps.items())) for name, deps in sorted(packages.items())}}
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    temporary.replace(path)  # never a half-written lock


def resolve(archive: Path, folder: Path, depth: int = 1) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Choose a version of each dependency of the package in `archive` (down `depth` levels):
    the wheel pip picks today for the target, kept in `folder`. Returns the pins, and why each
    dependency that could not be had was not (by name)."""
    pins: dict[str, dict[str, str]] = {}
    failed: dict[str, str] = {}
    level = [archive]
    for _ in range(depth):
        following = []
        for parent in level:
            for name, specifier in requirements(archive_metadata(parent)):
                if normal(name) in pins:
                    continue
                try:
                    wheel = _download_newest(name, specifier, folder)
                except DownloadFailed as error:
                    failed[normal(name)] = str(error)
                    continue
                pins[normal(name)] = {"version": _wheel_version(wheel), "sha256": _sha256(wheel)}
                following.append(wheel)
        level = following
    return pins, failed


def _download_newest(name: str, specifier: str, folder: Path) -> Path:
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                               *PIP_TARGET, *PIP_PATIENCE, f"{name}{specifier}", "-d", scratch],
                              capture_output=True, text=True)
        wheels = sorted(Path(scratch).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            raise DownloadFailed(f"{name}{specifier}: no wheel for the target ({_last_error(done.stderr)})")
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.move(str(wheels[0]), folder / wheels[0].name))


def _wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _last_error(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
    return lines[-1] if lines else "pip failed"


# ---- the scratch site ---------------------------------------------------------------------------

def scratch_site(package: str, pins: dict[str, dict[str, str]], cache: Path,
                 download: Downloader) -> tuple[Path | None, list[str]]:
    """`<cache>/deps/<package>/site` holding the source (`*.py`) and `*.dist-info` of each pinned
    dependency, unpacked from its wheel (nothing installed, nothing run); None when no
    dependency could be had. Returns it and one note per dependency that could not."""
    if not pins:
        return None, []
    site = cache / "deps" / package / "site"
    stamp = site / ".unpacked-from"
    wanted = json.dumps(pins, sort_keys=True)
    if stamp.is_file() and stamp.read_text() == wanted:
        return site, []
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    notes, unpacked = [], 0
    for name, pin in sorted(pins.items()):
        try:
            wheel = download(name, pin["version"], pin["sha256"], cache / "deps" / "wheels")
        except DownloadFailed as error:
            notes.append(f"{package}: dependency {name} {pin['version']} not fetched: {error}")
            continue
        unpack_sources(wheel, site)
        unpacked += 1
    if notes:
        return (site if unpacked else None), notes  # no stamp: the next run tries the missing ones again
    stamp.write_text(wanted)
    return site, notes


def unpack_sources(wheel: Path, site: Path) -> None:
    """The wheel's Python files and its metadata, as an install would lay them out
    (`*.data/purelib|platlib/` moved to the top); compiled modules and data files are left out."""
    with zipfile.ZipFile(wheel) as zipped:
        for member in zipped.infolist():
            name = member.filename
            data = re.match(r"^[^/]+\.data/([^/]+)/(.*)$", name)
            if data:
                if data.group(1) not in ("purelib", "platlib"):
                    continue  # scripts, headers, data files: not importable source
                name = data.group(2)
            if member.is_dir():
                continue
            if not (name.endswith(".py") or re.match(r"^[^/]+\.dist-info/", name)):
                continue
            target = (site / name).resolve()
            if not target.is_relative_to(site.resolve()):
                continue  # a path that climbs out of the site
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zipped.read(member))


def library_env(site: Path | None, environ: dict[str, str]) -> dict[str, str]:
    """The environment for `graphsafe check` with `site` searched first for libraries."""
    env = dict(environ)
    if site is not None:
        env["GRAPHSAFE_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(site), environ.get("GRAPHSAFE_LIBRARY_PATH")) if p)
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description="Resolve bench/real/deps.lock.json for every pinned package.")
    parser.add_argument("--packages", help="comma-separated package names (default: all pinned packages)")
    parser.add_argument("--depth", type=int, default=1, help="levels of dependencies (1: the package's own)")
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    import score  # noqa: PLC0415  (score imports this module)

    cache = args.cache or score.default_cache()
    packages = score.load_labels(HERE / "labels")  # only each package's pin is used
    chosen = sorted(packages) if not args.packages else [p for p in sorted(packages) if p in args.packages.split(",")]
    lock = read_lock()
    for name in chosen:
        lock[name], failed = score.resolve_dependencies(packages[name], cache, depth=args.depth)
        pinned = ", ".join(f"{dep} {pin['version']}" for dep, pin in sorted(lock[name].items()))
        print(f"{name}: {pinned or 'no dependencies'}")
        for note in failed.values():
            print(f"  note: {note}")
    write_lock(lock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
