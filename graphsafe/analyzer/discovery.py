"""Which files to analyse: walk the given paths, skip excluded and git-ignored ones.

Paths named explicitly on the command line are always analysed (ruff's behaviour); default
and configured excludes apply to what the walk finds, and to named paths too with
`force_exclude` (pre-commit names every changed file, excluded or not).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".graphsafe_cache", "__pycache__", "node_modules", "build", "dist",
    "site-packages", "__pypackages__", ".eggs", "*.egg-info",
)


# What a directory walk picks up: Python sources, and launch scripts (read by the
# Megatron configuration rules only; see analyzer/parsing.OTHER_LANGUAGES).
SOURCE_SUFFIXES = (".py", ".sh")


@dataclass(frozen=True)
class Source:
    path: Path  # as given or found (for display)
    module: str  # dotted module name from the package layout
    is_package: bool  # an __init__.py


def module_name(path: Path, packages: dict | None = None) -> tuple[str, bool]:
    """`pkg/sub/mod.py` → ("pkg.sub.mod", False), walking up while __init__.py exists.
    `packages` memoises the walk per directory across calls (see _package_of)."""
    path = path.absolute()
    is_package = path.name == "__init__.py"
    # A launch script is not importable: a name no Python module can have keeps `train.sh`
    # from taking the place of `train.py` in the project's module table.
    stem = path.stem if path.suffix in (".py", ".pyi", "") else f"<{path.name}>"
    parts = list(_package_of(path.parent, {} if packages is None else packages)[0])
    if not is_package:
        parts.append(stem)
    if not parts:  # a bare __init__.py outside any package
        parts = [path.parent.name]
    return ".".join(parts), is_package


def _package_of(directory: Path, memo: dict) -> tuple[tuple[str, ...], Path]:
    """(the packages from the top one down to `directory`, the directory the top one is in):
    `directory` walked up while __init__.py exists, once per directory of a run (a file's
    stat per level, for thousands of files, was a tenth of a warm run's own work)."""
    found = memo.get(directory)
    if found is None:
        if (directory / "__init__.py").is_file() and directory != directory.parent:
            parts, root = _package_of(directory.parent, memo)
            found = ((*parts, directory.name), root)
        else:
            found = ((), directory)
        memo[directory] = found
    return found


def _glob_regex(pattern: str) -> str:
    """A gitignore glob as a regex body: `*` and `?` stay within a path segment, `**` crosses."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 1 :]:
            j = pattern.index("]", i + 1)
            body = pattern[i + 1 : j]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = j + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def package_root(path: Path) -> Path:
    """The directory a script-style `import` of this file's top package would start from."""
    directory = path.absolute().parent
    while (directory / "__init__.py").is_file() and directory != directory.parent:
        directory = directory.parent
    return directory


@dataclass(frozen=True)
class ModuleNaming:
    module: str
    is_package: bool
    # top-level import names that mean a renamed module of the same root (`model` → `corpus.decode_loop.model`)
    renames: tuple[tuple[str, str], ...] = ()


def module_names(files: list[Path], base: Path) -> dict[Path, ModuleNaming]:
    """Module names for a set of files, unique across the set.

    Two example folders may each have a `model.py` imported as `import model`: plain names
    would merge them. Where a top-level name occurs under more than one root, every module of
    those roots gets its root's dotted path as a prefix, and their imports are renamed to
    match (Python resolves a script's `import model` to its own directory first).
    """
    packages: dict = {}
    plain = {f: module_name(f, packages) for f in files}
    roots = {f: _package_of(f.absolute().parent, packages)[1] for f in files}
    tops_by_root: dict[Path, set[str]] = {}
    for f, (module, _) in plain.items():
        tops_by_root.setdefault(roots[f], set()).add(module.split(".", 1)[0])
    seen: dict[str, set[Path]] = {}
    for root, tops in tops_by_root.items():
        for top in tops:
            seen.setdefault(top, set()).add(root)
    clashing = {root for top, rs in seen.items() if len(rs) > 1 for root in rs}
    prefixes = {root: _dotted_dir(root, base) for root in clashing}
    named: dict[Path, ModuleNaming] = {}
    for f, (module, is_package) in plain.items():
        prefix = prefixes.get(roots[f])
        if not prefix:
            named[f] = ModuleNaming(module, is_package)
            continue
        renames = tuple(sorted((top, f"{prefix}.{top}") for top in tops_by_root[roots[f]]))
        named[f] = ModuleNaming(f"{prefix}.{module}", is_package, renames)
    return named


def _dotted_dir(directory: Path, base: Path) -> str:
    try:
        rel = directory.relative_to(base.absolute())
    except ValueError:
        rel = Path(*directory.parts[1:])
    parts = [p.replace("-", "_").replace(".", "_") for p in rel.parts if p not in ("", "/")]
    return ".".join(parts) or "_root"


class _GitIgnore:
    """The common subset of .gitignore: globs, `dir/`, `/anchored`, `**`, `!negation`."""

    def __init__(self, base: Path, lines: list[str]) -> None:
        self.base = base
        self.rules: list[tuple[re.Pattern, bool, bool]] = []  # (regex, negate, dir_only)
        for raw in lines:
            line = raw.rstrip("\n").rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            if negate:
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.strip("/") if dir_only else line
            anchored = "/" in line.lstrip("/")
            body = _glob_regex(line.lstrip("/"))
            pattern = ("^" if anchored else "^(?:.*/)?") + body + "$"
            self.rules.append((re.compile(pattern), negate, dir_only))

    def ignored(self, path: Path, is_dir: bool) -> bool | None:
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            return None
        verdict = None
        for regex, negate, dir_only in self.rules:
            if dir_only and not is_dir:
                continue
            if regex.match(rel):
                verdict = not negate
        return verdict


def _load_gitignores(directory: Path, stack: list[_GitIgnore]) -> list[_GitIgnore]:
    ignore_file = directory / ".gitignore"
    if ignore_file.is_file():
        try:
            lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return stack
        return [*stack, _GitIgnore(directory, lines)]
    return stack


def _excluded(path: Path, root: Path, patterns: tuple[str, ...]) -> bool:
    # Directories are pruned as the walk meets them, so a pattern never needs to match an
    # ancestor: `.venv` must not exclude everything when the user points us inside one.
    by_name, by_path = _exclusion_matchers(patterns)
    if by_name(os.path.normcase(path.name)):
        return True
    try:
        rel = path.absolute().relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    return by_path(os.path.normcase(rel)) is not None


_MATCHERS: dict[tuple[str, ...], tuple] = {}


def _exclusion_matchers(patterns: tuple[str, ...]):
    """One regex for all patterns against a name, one against a root-relative path: what
    `fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, p.rstrip("/"))` over each pattern
    answers, in two calls per path instead of two per pattern."""
    found = _MATCHERS.get(patterns)
    if found is None:
        def any_of(texts):
            return re.compile("|".join(fnmatch.translate(os.path.normcase(t)) for t in texts) or "(?!)").match

        found = _MATCHERS[patterns] = (any_of(patterns), any_of(p.rstrip("/") for p in patterns))
    return found


def exclusion_patterns(exclude: tuple[str, ...], default_exclude: bool = True) -> tuple[str, ...]:
    return (DEFAULT_EXCLUDE if default_exclude else ()) + tuple(exclude)


def force_excluded(path: Path, root: Path, patterns: tuple[str, ...]) -> bool:
    """A path named on the command line that an exclusion covers: it, or a directory above it
    up to the project root (outside the root: the directories it is named with), matches."""
    absolute = Path(os.path.abspath(path))
    try:
        ancestors = absolute.relative_to(root.absolute()).parents
        base = root.absolute()
    except ValueError:
        ancestors, base = path.parents, Path()
    candidates = [absolute] + [base / a for a in ancestors if str(a) != "."]
    return any(_excluded(candidate, root, patterns) for candidate in candidates)


def discover(paths: list[Path], *, root: Path, exclude: tuple[str, ...] = (), respect_gitignore: bool = True,
             default_exclude: bool = True, force_exclude: bool = False) -> list[Path]:
    """Source files (SOURCE_SUFFIXES) under `paths`, sorted, without duplicates. `exclude` adds to
    DEFAULT_EXCLUDE, or replaces it when `default_exclude` is False."""
    patterns = exclusion_patterns(tuple(exclude), default_exclude)
    found: dict[str, Path] = {}
    for given in paths:
        if force_exclude and force_excluded(given, root, patterns):
            continue
        if not given.is_dir():  # a file, a broken link, a FIFO or a device: read (or reported) as named
            found.setdefault(str(given), given)  # named explicitly: always analysed
            continue
        base_ignores = _parent_gitignores(given) if respect_gitignore else []
        ignores_of: dict[Path, list[_GitIgnore]] = {}
        for directory, dirnames, filenames in os.walk(given, followlinks=False):
            current = Path(directory)
            inherited = ignores_of.get(current.parent, base_ignores) if current != given else base_ignores
            ignores = _load_gitignores(current, inherited) if respect_gitignore else []
            ignores_of[current] = ignores
            keep = []
            for d in sorted(dirnames):
                sub = current / d
                if _excluded(sub, root, patterns) or _is_ignored(ignores, sub, True):
                    continue
                keep.append(d)
            dirnames[:] = keep
            for f in sorted(filenames):
                if not f.endswith(SOURCE_SUFFIXES):
                    continue
                path = current / f
                if _excluded(path, root, patterns) or _is_ignored(ignores, path, False):
                    continue
                found.setdefault(str(path), path)
    return [found[k] for k in sorted(found)]


def _parent_gitignores(directory: Path) -> list[_GitIgnore]:
    """.gitignore files from the repository root down to (excluding) `directory`."""
    directory = directory.absolute()
    chain = []
    for parent in [directory, *directory.parents]:
        chain.append(parent)
        if (parent / ".git").exists():
            break
    else:
        return []
    stack: list[_GitIgnore] = []
    for parent in reversed(chain[1:]):
        stack = _load_gitignores(parent, stack)
    return stack


def _is_ignored(ignores: list[_GitIgnore], path: Path, is_dir: bool) -> bool:
    verdict = False
    for ignore in ignores:
        result = ignore.ignored(path, is_dir)
        if result is not None:
            verdict = result
    return verdict
