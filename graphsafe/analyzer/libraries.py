"""Installed libraries a region reaches: their files found without importing anything, analysed
like project files (the same rules), cached per package version.

Only the library files that a region's calls lead to are read, lazily, round by round: a name the
project cannot resolve (`diffusers.utils.torch_utils.randn_tensor`, a base class, a held module's
class) is looked up on the analysing interpreter's site-packages as `a/b.py` or `a/b/__init__.py`,
following `from .x import y` re-exports; the file's facts join the call graph and the walk goes on.
Nothing here imports a package (importlib would import its parents, and torch with them).
"""

from __future__ import annotations

import builtins
import os
import re
import sys
import sysconfig
from dataclasses import dataclass, replace
from pathlib import Path

from graphsafe.analyzer.cache import FactsCache
from graphsafe.analyzer.callgraph import Project, Reach
from graphsafe.analyzer.facts import FileFacts
from graphsafe.analyzer.parsing import analyze_bytes
from graphsafe.analyzer.reading import read_source
from graphsafe.model import Diagnostic, Position, Region

# Extra directories searched before site-packages (os.pathsep-separated): a vendored tree, tests.
LIBRARY_PATH_ENV = "GRAPHSAFE_LIBRARY_PATH"
# Packages whose functions the rules name directly (their vocabulary), not code to walk.
VOCABULARY = frozenset({"torch", "numpy"})
# A bound on what one run parses of libraries (a region reaching a framework's whole tree).
MAX_FILES = 200
_MAX_ROUNDS = 8
_MAX_ALIAS_HOPS = 8


@dataclass(frozen=True)
class LibraryFile:
    package: str  # the distribution's name, from its METADATA ("" when none was found)
    version: str
    path: Path
    shown: str  # relative to its site-packages directory: `diffusers/utils/torch_utils.py`
    module: str
    is_package: bool


def search_path() -> tuple[Path, ...]:
    """GRAPHSAFE_LIBRARY_PATH, then the site-packages of the interpreter running graphsafe, in order."""
    extra = [Path(p) for p in os.environ.get(LIBRARY_PATH_ENV, "").split(os.pathsep) if p]
    stdlib = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    found = [Path(p) for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")
             and os.path.realpath(p) not in stdlib]
    return tuple(dict.fromkeys(p for p in [*extra, *found] if p.is_dir()))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


class LibraryFinder:
    """Module names → installed source files, with each one's distribution version."""

    def __init__(self, roots: tuple[Path, ...] | None = None) -> None:
        self.roots = search_path() if roots is None else roots
        self._top: dict[str, Path | None] = {}
        self._versions: dict[Path, dict[str, tuple[str, str]]] = {}

    def installed(self, top: str) -> Path | None:
        """The first search directory holding package or module `top`."""
        if top not in self._top:
            # a directory without __init__.py is a namespace package (`google/protobuf/...`)
            self._top[top] = next((r for r in self.roots if (r / top).is_dir() or (r / f"{top}.py").is_file()), None)
        return self._top[top]

    def module_file(self, module: str) -> LibraryFile | None:
        parts = module.split(".")
        root = self.installed(parts[0])
        if root is None:
            return None
        base = root.joinpath(*parts)
        for path, is_package in ((base.with_name(base.name + ".py"), False), (base / "__init__.py", True)):
            if path.is_file():
                package, version = self.version(root, parts[0])
                return LibraryFile(package, version, path, path.relative_to(root).as_posix(), module, is_package)
        return None

    def version(self, root: Path, top: str) -> tuple[str, str]:
        """(distribution, version) of top-level package `top` in `root`, from `*.dist-info/METADATA`
        (matched by top_level.txt, else by name); ("", "") when none says."""
        if root not in self._versions:
            table: dict[str, tuple[str, str]] = {}
            try:
                infos = [root / n for n in os.listdir(root) if n.endswith(".dist-info")]
            except OSError:
                infos = []
            for info in infos:
                name, version = _metadata(info / "METADATA")
                if not name:
                    continue
                tops = _lines(info / "top_level.txt") or [name]
                for t in tops:
                    table.setdefault(_normal(t), (name, version))
            self._versions[root] = table
        return self._versions[root].get(_normal(top), ("", ""))


def _metadata(path: Path) -> tuple[str, str]:
    content = read_source(path)
    if not isinstance(content, bytes):
        return "", ""
    name = version = ""
    for line in content.decode("utf-8", "replace").splitlines():
        if not line.strip():
            break  # the headers end at the first blank line
        key, _, value = line.partition(":")
        if key == "Name":
            name = value.strip()
        elif key == "Version":
            version = value.strip()
    return name, version


def _lines(path: Path) -> list[str]:
    content = read_source(path)
    return [s.strip() for s in content.decode("utf-8", "replace").splitlines() if s.strip()] \
        if isinstance(content, bytes) else []


# library facts this process has read (a `fix` re-checks each buffer, an editor each edit)
_SEEN: dict[str, FileFacts] = {}


def library_facts(file: LibraryFile, rules, cache: FactsCache | None) -> FileFacts:
    """The file's facts as callees see them: no regions, noqa or configuration hazards of its own
    (the library is not the user's code to mark or edit). Cached per (package, version, file);
    the file's size and mtime guard an editable install whose version does not move."""
    try:
        stat = file.path.stat()
        stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
    except OSError:
        stamp = ""
    key = FactsCache.key(f"lib:{file.package}=={file.version}:{file.path}", f"{file.module}\0{stamp}", b"")
    cached = _SEEN.get(key) or (cache.get(key) if cache else None)
    if cached is not None:
        _SEEN[key] = cached
        return cached
    content = read_source(file.path)
    if not isinstance(content, bytes):
        return FileFacts(str(file.path), file.module, (), (), (), (), ())
    facts = analyze_bytes(str(file.path), file.module, file.is_package, content, rules)
    facts = replace(facts, units=tuple(replace(u, marks=()) for u in facts.units), region_refs=(), noqa=(),
                    errors=(), always=(), noqa_directives=(), wanted=())
    if cache:
        cache.put(key, facts)
    _SEEN[key] = facts
    return facts


@dataclass
class Followed:
    """What following libraries added: their files (by path) and facts, and the notes on what
    could not be followed (one per package that reached code calls into and that is not installed)."""
    files: dict[str, LibraryFile]
    facts: list[FileFacts]
    notes: list[str]


def follow(project_facts: list[FileFacts], regions: list[Region], project: Project, reach: Reach,
           finder: LibraryFinder, rules, cache: FactsCache | None) -> tuple[Project, Reach, Followed]:
    """The call graph grown by the library files reached code calls into, round by round, until no
    reached name leads to a new file (or MAX_FILES)."""
    own = {f.module.split(".")[0] for f in project_facts}
    skip = own | VOCABULARY | set(sys.stdlib_module_names) | {"__future__", "builtins"}
    loaded: dict[str, FileFacts] = {}  # module → facts
    files: dict[str, LibraryFile] = {}
    missing: dict[str, None] = {}
    tried: set[str] = set()

    def load(module: str) -> FileFacts | None:
        if module not in loaded:
            file = finder.module_file(module)
            if file is None or len(loaded) >= MAX_FILES:
                return None
            loaded[module] = library_facts(file, rules, cache)
            files[str(file.path)] = file
        return loaded[module]

    def lead(name: str, hops: int = 0) -> None:
        """Load the file defining `name`, through the re-exports of packages on the way."""
        parts = name.split(".")
        if parts[0] in skip or hops > _MAX_ALIAS_HOPS:
            return
        if finder.installed(parts[0]) is None:
            # An imported module's names are dotted; a bare name (`Base` bound by a module-level `if`)
            # or a builtin's (`object.__setattr__`) is one the call graph left unresolved, not a package.
            if len(parts) > 1 and not hasattr(builtins, parts[0]):
                missing[parts[0]] = None
            return
        for i in range(len(parts), 0, -1):
            facts = load(".".join(parts[:i]))
            if facts is None:
                continue
            rest = parts[i:]
            target = dict(facts.aliases).get(rest[0]) if rest else None
            if target is not None and target != name:
                lead(".".join([target, *rest[1:]]), hops + 1)
            return

    for _ in range(_MAX_ROUNDS):
        before = len(loaded)
        for name in _unresolved_names(project, reach):
            if name not in tried:
                tried.add(name)
                lead(name)
        if len(loaded) == before:
            break
        project = Project(project_facts, library=list(loaded.values()))
        reach = project.reach(regions)
    notes = [f"not followed: `{top}` is not installed (calls into it were not analysed)" for top in sorted(missing)]
    if len(loaded) >= MAX_FILES:
        notes.append(f"libraries followed up to {MAX_FILES} files; calls further in were not analysed")
    return project, reach, Followed(files, list(loaded.values()), notes)


def asks_about_installed(project_facts: list[FileFacts], finder: LibraryFinder) -> bool:
    """Does some file ask what a name of an installed package returns (a wanted id naming
    `pkg.mod.func`; not the project's own, not the rules' vocabulary)? Where none does, the
    return-kind pass has nothing to learn from libraries."""
    skip = {f.module.split(".")[0] for f in project_facts} | VOCABULARY | set(sys.stdlib_module_names)
    tops = {name.split(".")[0] for f in project_facts for pid in f.wanted for name in _DOTTED.findall(pid)} - skip
    return any(finder.installed(top) is not None for top in tops)


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _unresolved_names(project: Project, reach: Reach) -> list[str]:
    """Dotted names that reached code calls, constructs or inherits from, and that no analysed file
    defines: where the call graph stops."""
    names: dict[str, None] = {}

    def want(name: str) -> None:
        if name and project.resolve_symbol(name) is None:
            names[name] = None

    classes: dict[str, None] = {}
    for key in reach.order:
        unit = project.units[key].unit
        if unit.class_key:
            classes[unit.class_key] = None
        for ref in unit.calls:
            if ref.kind == "global":
                want(ref.target)
            elif ref.kind in ("method", "attrs"):
                want(ref.target.partition("::")[0])
            elif ref.kind == "self" and unit.class_key:
                for held in project.attr_classes(unit.class_key, ref.target):
                    want(held)
    for class_key in classes:
        info = project.classes.get(class_key)
        for base in info.bases if info else ():
            want(base)
    return list(names)


def library_diagnostics(project: Project, reach: Reach, followed: Followed) -> list[Diagnostic]:
    """Hazards reached code runs inside library files, each said at the project line whose call
    leads into the library (the library is not the user's to edit), with the way in as the
    message's end (`via diffusers/utils/torch_utils.py:NN randn_tensor`) and no fix."""
    found: dict[tuple, Diagnostic] = {}
    lines: dict[str, list[str]] = {}
    for caller, line, steps, hit in project.library_hits(reach):
        path = project.units[caller].path
        chain, sites = project.chain_of(caller, reach)
        via = " → ".join(f"{followed.files[p].shown}:{n} {project.units[unit].unit.display}" for unit, p, n in steps
                         if p in followed.files)
        text = _line(path, line, lines)
        start = Position(line, len(text) - len(text.lstrip()))
        diagnostic = Diagnostic(hit.code, f"{hit.message} (via {via})", path, start, Position(line, len(text.rstrip())),
                                reach.root_of[caller], chain, None, call_sites=sites)
        found.setdefault((path, start, hit.code), diagnostic)
    return list(found.values())


def _line(path: str, number: int, memo: dict[str, list[str]]) -> str:
    if path not in memo:
        content = read_source(Path(path))
        memo[path] = content.decode("utf-8", "replace").splitlines() if isinstance(content, bytes) else []
    return memo[path][number - 1] if 0 < number <= len(memo[path]) else ""
