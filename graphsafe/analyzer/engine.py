"""The analysis engine: paths → per-file facts (pool + cache) → regions → filtered diagnostics.

No printing here: front-ends (cli, lsp) format the result.
"""

from __future__ import annotations

import fnmatch
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable

from graphsafe.analyzer import libraries, returns, run_facts
from graphsafe.analyzer.cache import FactsCache
from graphsafe.analyzer.callgraph import Project, Reach
from graphsafe.analyzer.discovery import ModuleNaming, discover, module_name, module_names
from graphsafe.analyzer.facts import FileFacts, Unit
from graphsafe.analyzer.fix_scope import without_out_of_scope_fixes
from graphsafe.analyzer.grouping import each_use, group_uses
from graphsafe.analyzer.noqa import suppressed
from graphsafe.analyzer.unused_noqa import unused_noqa
from graphsafe.analyzer.parsing import analyze_bytes, analyze_text, error_facts, lasting_objects, no_cyclic_gc
from graphsafe.analyzer.reading import read_source
from graphsafe.analyzer.workers import WorkerDied, can_fork, run_jobs
from graphsafe.analyzer.returns import external_key
from graphsafe.config import Settings
from graphsafe.model import Diagnostic, Region
from graphsafe.rules import CHECK_RULES, matches, selected
from graphsafe.rules.internal_error import InternalError
from graphsafe.rules.unused_noqa import UnusedNoqa

# Below this many uncached files a process pool costs more than it saves.
_POOL_THRESHOLD = 8


@dataclass
class CheckResult:
    diagnostics: list[Diagnostic]
    regions: list[Region]
    files: int
    cached: int = 0
    seconds: float = 0.0
    facts: list[FileFacts] = field(default_factory=list, repr=False)
    notes: list[str] = field(default_factory=list)  # what could not be followed (libraries not installed)


def _display_path(path: Path, root: Path) -> str:
    """Paths as the user gave them, relative to the cwd when inside it (ruff prints relative)."""
    try:
        return os.path.relpath(path, Path.cwd()) if path.is_absolute() else str(path)
    except ValueError:
        return str(path)


def _analyze_job(job: tuple[str, str, str, bool, tuple], external=None) -> tuple[FileFacts, str]:
    """Read and analyse one file in a worker; returns the facts and the cache key of what was read.

    Workers read the files themselves so the parent never holds the tree's contents (they
    would be copied into every forked worker's memory)."""
    shown, path, module, is_package, renames = job
    content = read_source(Path(path))
    if isinstance(content, str):
        return error_facts(shown, module, content), ""
    facts = analyze_bytes(shown, module, is_package, content, CHECK_RULES, renames, external)
    key = FactsCache.key(shown, module + repr(renames) + ("\0" + external_key(external) if external else ""), content)
    if len(content) > _BIG_FILE:
        _release_memory()  # a big file's syntax tree leaves the worker's heap fragmented
    return facts, key


_BIG_FILE = 200 * 1024
_HUGE_FILE = 1024 * 1024


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _release_memory() -> None:
    """Return freed heap pages to the OS (glibc keeps them otherwise: RSS would stay at the
    peak of the largest file each worker has seen)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def collect_facts(
    files: list[Path],
    root: Path,
    *,
    jobs: int | None = None,
    cache: FactsCache | None = None,
    progress: Callable[[int, int], None] | None = None,
    freeze: bool = True,
    observed: run_facts.RunFacts | None = None,
    project: Callable[[list[FileFacts]], Project] | None = None,
) -> tuple[list[FileFacts], int]:
    """Facts for every file, from the cache where possible; returns (facts, cache hits).
    `freeze=False` leaves the gathered facts out of gc.freeze (see lasting_objects);
    `observed`: run-time facts, attached to the files they match (analyzer/run_facts.py);
    `project`: makes the call graph the return-kind pass asks (default: the files' own; see
    _with_libraries)."""
    results: dict[int, FileFacts] = {}
    pending: list[tuple[int, tuple[str, str, str, bool, tuple]]] = []
    hits = 0
    naming = module_names(files, Path.cwd())
    jobs_by_index: dict[int, tuple[str, str, str, bool, tuple]] = {}
    with lasting_objects(freeze):  # unpickling makes millions of objects, none in a cycle
        for index, path in enumerate(files):
            shown = _display_path(path, root)
            named = naming[path]
            jobs_by_index[index] = (shown, str(path), named.module, named.is_package, named.renames)
            if cache:
                content = read_source(path)
                if isinstance(content, bytes):
                    cached = cache.get(FactsCache.key(shown, named.module + repr(named.renames), content))
                    if cached is not None:
                        results[index] = cached
                        hits += 1
                        continue
                del content
            pending.append((index, (shown, str(path), named.module, named.is_package, named.renames)))
    total, done = len(files), len(files) - len(pending)
    jobs = jobs or os.cpu_count() or 1

    def finish(index: int, facts: FileFacts, key: str) -> None:
        nonlocal done
        results[index] = facts
        if cache and key:
            cache.put(key, facts)
        done += 1
        if progress:
            progress(done, total)

    if len(pending) >= _POOL_THRESHOLD and jobs > 1 and can_fork():
        # The few very large files (a 1.4 MB test table has a ~700 MB syntax tree) run alone,
        # after the others: run beside other workers they set the memory peak.
        huge = [p for p in pending if _size(p[1][1]) > _HUGE_FILE]
        pooled = [p for p in pending if _size(p[1][1]) <= _HUGE_FILE]
        for group, workers in ((pooled, jobs), (huge, 1)):
            # the workers are forked before anything below runs; here the facts pile up
            with lasting_objects(freeze):
                for k, answer in run_jobs(_analyze_job, [(job,) for _, job in group], workers):
                    index, job = group[k]
                    finish(index, *_answered(job, answer))
    else:
        for index, job in pending:
            finish(index, *_analyze_job(job))
    facts = run_facts.attach([results[i] for i in range(len(files))], observed, _text_of)

    def rewalk_all(todo: list[tuple[int, dict]]) -> dict[int, FileFacts | None]:
        # Cached re-walks are looked up here: a pool started only to read the cache costs
        # ~0.5 s, a sixth of a warm run of the torch tree.
        found = {i: _cached_rewalk(jobs_by_index[i], external, cache) for i, external in todo} if cache else {}
        todo = [(i, external) for i, external in todo if found.get(i) is None]
        work = [(jobs_by_index[i], external, cache) for i, external in todo]
        if len(work) > 1 and jobs > 1 and can_fork():
            # the largest files first, so that the pool does not end waiting on one of them
            order = sorted(range(len(work)), key=lambda k: -_size(work[k][0][1]))
            for k, answer in run_jobs(_rewalk, [work[i] for i in order], min(jobs, len(work))):
                job = work[order[k]][0]
                found[todo[order[k]][0]] = _answered(job, answer)[0] if isinstance(answer, WorkerDied) else answer
        else:
            found.update({i: _rewalk(*w) for (i, _), w in zip(todo, work)})
        return found

    with lasting_objects(freeze):  # the project's return kinds; re-walks pause the collector themselves
        return returns.refine(facts, project or Project, rewalk_all), hits


def _text_of(path: str) -> str | None:
    content = read_source(Path(path))
    return content.decode("utf-8", "surrogateescape") if isinstance(content, bytes) else None


def _answered(job: tuple[str, str, str, bool, tuple], answer) -> tuple[FileFacts, str]:
    """A worker's (facts, cache key), or a GS000 for a file whose worker died on it (not cached)."""
    if isinstance(answer, WorkerDied):
        shown, _, module, _, _ = job
        return error_facts(shown, module, answer.reason), ""
    return answer


def _rewalk_key(shown: str, module: str, renames: tuple, external: dict, content: bytes) -> str:
    return FactsCache.key(shown, module + repr(renames) + "\0" + external_key(external), content)


def _cached_rewalk(job: tuple[str, str, str, bool, tuple], external: dict, cache: FactsCache) -> FileFacts | None:
    """A re-walk's facts from the cache, or None (a miss, or a file that cannot be read)."""
    shown, path, module, is_package, renames = job
    content = read_source(Path(path))
    if not isinstance(content, bytes):
        return None
    return cache.get(_rewalk_key(shown, module, renames, external, content))


def _rewalk(job: tuple[str, str, str, bool, tuple], external: dict, cache: FactsCache | None) -> FileFacts | None:
    """Walk a file again with the kinds that project functions elsewhere return. Cached under
    the file's content and those kinds: when a callee's summary changes, the key changes."""
    shown, path, module, is_package, renames = job
    if cache:
        content = read_source(Path(path))
        if not isinstance(content, bytes):
            return None
        cached = cache.get(_rewalk_key(shown, module, renames, external, content))
        if cached is not None:
            return cached
    facts, key = _analyze_job(job, external)
    if cache and key:
        cache.put(key, facts)
    return facts


def filter_diagnostics(diagnostics: Iterable[Diagnostic], facts: list[FileFacts], settings: Settings, *,
                       find_unused_noqa: bool = True) -> list[Diagnostic]:
    """Apply --select/--extend-select/--ignore, per-file-ignores and `# noqa` to each use; add
    GS001 (unused noqa) when enabled (`find_unused_noqa=False` for diagnostics filtered once
    already: the ones a noqa held back are gone); drop the fixes of codes that are not fixable;
    then group each hazard's uses (grouping.py). Noqa and GS001 see each use before grouping, so
    a noqa on a later use of a grouped hazard holds that use back and counts as used."""
    codes = selected(list(settings.select), list(settings.ignore), list(settings.extend_select))
    noqa = {f.path: dict(f.noqa) for f in facts}
    kept = []
    held: dict[str, dict[int, set[str]]] = {}  # path → line → codes a noqa comment held back
    for d in each_use(diagnostics):
        if d.code not in codes or _per_file_ignored(d, settings):
            continue
        if d.code != "GS000" and suppressed(d.code, d.start.line, noqa.get(d.path, {})):
            held.setdefault(d.path, {}).setdefault(d.start.line, set()).add(d.code)
            continue
        kept.append(d)
    if find_unused_noqa and UnusedNoqa.code in codes:
        for f in facts:
            if any(e.code == InternalError.code for e in f.errors):
                continue  # a function whose analysis failed (GS002): what its noqa comments hold back is unknown
            for d in unused_noqa(f.path, f.noqa_directives, held.get(f.path, {}), codes):
                if not _per_file_ignored(d, settings) and not suppressed(d.code, d.start.line, noqa.get(d.path, {})):
                    kept.append(d)
    kept = without_out_of_scope_fixes(kept, tuple(settings.regions), settings.root)
    if settings.fixable is not None or settings.unfixable:
        fixable = selected(list(settings.fixable or ["ALL"]), list(settings.unfixable))
        kept = [d if d.fix is None or d.code in fixable else replace(d, fix=None) for d in kept]
    return group_uses(sorted(kept, key=lambda d: d.sort_key))


def _per_file_ignored(d: Diagnostic, settings: Settings) -> bool:
    if not settings.per_file_ignores:
        return False
    try:
        rel = Path(d.path).absolute().relative_to(settings.root).as_posix()
    except ValueError:
        rel = Path(d.path).as_posix()
    for pattern, codes in settings.per_file_ignores:
        if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(Path(rel).name, pattern):
            if any(matches(d.code, c) for c in codes):
                return True
    return False


def diagnose(facts: list[FileFacts], settings: Settings) -> tuple[list[Diagnostic], list[Region]]:
    diagnostics, regions, _ = diagnose_following(facts, settings, None)
    return diagnostics, regions


def diagnose_following(facts: list[FileFacts], settings: Settings, finder: libraries.LibraryFinder | None,
                       cache: FactsCache | None = None) -> tuple[list[Diagnostic], list[Region], list[str]]:
    """diagnose(), following calls into the installed libraries `finder` finds (None: not at all);
    also answers the notes on what could not be followed."""
    project = Project(facts)
    regions = project.regions(settings.regions, settings.root, marked=not settings.pattern_regions_only)
    reach = project.reach(regions)
    followed = None
    if finder is not None and regions:
        project, reach, followed = libraries.follow(facts, regions, project, reach, finder, CHECK_RULES, cache)
    found = project.hit_diagnostics(reach)
    if followed is not None:
        found += libraries.library_diagnostics(project, reach, followed)
    found.extend(e for f in facts for e in f.errors)
    for f in facts:
        if f.always:
            found.extend(project.always_diagnostics(f, reach))
    return filter_diagnostics(found, facts, settings), regions, followed.notes if followed else []


def discover_files(paths: list[Path], settings: Settings) -> list[Path]:
    """The files a run over `paths` analyses (what `--show-files` lists)."""
    return discover(paths, root=settings.root, exclude=tuple(settings.exclude) + tuple(settings.extend_exclude),
                    respect_gitignore=settings.respect_gitignore, default_exclude=settings.default_exclude,
                    force_exclude=settings.force_exclude)


def check_paths(
    paths: list[Path],
    settings: Settings,
    *,
    jobs: int | None = None,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CheckResult:
    started = time.perf_counter()
    files = discover_files(paths, settings)
    cache = FactsCache(cache_dir or settings.root / ".graphsafe_cache") if use_cache else None
    finder = libraries.LibraryFinder() if settings.follow_libraries else None
    facts, hits = collect_facts(files, settings.root, jobs=jobs, cache=cache, progress=progress,
                                observed=run_facts.for_settings(settings),
                                project=_with_libraries(settings, finder, cache) if finder else None)
    with lasting_objects():
        diagnostics, regions, notes = diagnose_following(facts, settings, finder, cache)
    return CheckResult(diagnostics, regions, len(files), hits, time.perf_counter() - started, facts, notes)


def _with_libraries(settings: Settings, finder: libraries.LibraryFinder, cache: FactsCache | None
                    ) -> Callable[[list[FileFacts]], Project]:
    """A maker of the call graph of some project facts grown by the library files their regions
    reach (for the return-kind pass: `noise = randn_tensor(...)` is a tensor)."""
    def project(facts: list[FileFacts]) -> Project:
        if not libraries.asks_about_installed(facts, finder):
            return Project(facts)  # nothing to follow: no regions and reach computed for it
        plain = Project(facts)
        regions = plain.regions(settings.regions, settings.root, marked=not settings.pattern_regions_only)
        if not regions:
            return plain
        return libraries.follow(facts, regions, plain, plain.reach(regions), finder, CHECK_RULES, cache)[0]
    return project


def shape_of(facts: FileFacts) -> FileFacts:
    """What other files and the call graph see of a file: its facts without hits and noqa."""
    return replace(facts, units=tuple(replace(u, hits=()) for u in facts.units), noqa=(), errors=(), always=(),
                   noqa_directives=())


@dataclass
class _ProjectStep:
    others: list[FileFacts]  # the very objects (compared by identity: cheap and exact)
    settings: Settings
    shape: FileFacts
    project: Project
    regions: list[Region]
    reach: Reach


class ProjectCache:
    """The project step (regions, call graph, reachability) of one buffer's last analysis.

    An edit that changes only the buffer's hits (typing inside a body, a trailing space)
    leaves the call graph as it was: the reachable units and their chains are reused and
    only the buffer's hits are turned into diagnostics. Anything else (the buffer's calls,
    units, lines, classes; another file; the settings) runs the whole step."""

    def __init__(self) -> None:
        self._last: _ProjectStep | None = None
        self.reused = False  # the last diagnose() reused the project step (for tests and stats)

    def diagnose(self, facts: FileFacts, others: list[FileFacts], settings: Settings) -> tuple[list[Diagnostic], list[Region]]:
        """`diagnose([facts, *others], settings)`, keeping only `facts.path`'s diagnostics."""
        shape = shape_of(facts)
        last = self._last
        if (last is not None and last.shape == shape and last.settings == settings and len(last.others) == len(others)
                and all(a is b for a, b in zip(last.others, others))):
            step, self.reused = last, True
            units: dict[str, Unit] = {}
            for unit in facts.units:
                units.setdefault(unit.key, unit)  # the first of a redefined name, as Project keeps it
            found = step.project.hit_diagnostics(step.reach, facts.path, units)
        else:
            self.reused = False
            project = Project([facts, *others])
            regions = project.regions(settings.regions, settings.root, marked=not settings.pattern_regions_only)
            step = self._last = _ProjectStep(list(others), settings, shape, project, regions, project.reach(regions))
            found = project.hit_diagnostics(step.reach, facts.path)
        found.extend(facts.errors)
        found.extend(step.project.always_diagnostics(facts, step.reach))
        return filter_diagnostics(found, [facts], settings), step.regions


def check_source(source: str, filename: str, settings: Settings | None = None, others: list[FileFacts] = (),
                 naming: ModuleNaming | None = None, parse=None, cache: ProjectCache | None = None,
                 facts_text: str | None = None) -> CheckResult:
    """Analyse one in-memory buffer as if it were `filename` (stdin mode, editors).

    `others` are facts of the rest of the project (e.g. an editor's workspace index), so
    regions and chains that cross files stay correct; `naming` is the buffer's module name
    in that project (see discovery.module_names). An editor keeps state per buffer between
    edits: `parse` replaces libcst.parse_module (analyzer/incremental.py) and `cache` reuses
    the project step; both give exactly the result of a run without them.
    `facts_text`: the text whose functions' run-time facts apply (default `source`): `fix`
    re-checks its edits with the facts of the text it started from.
    """
    with no_cyclic_gc():
        return _check_source(source, filename, settings or Settings(), others, naming, parse, cache,
                             source if facts_text is None else facts_text)


def _check_source(source: str, filename: str, settings: Settings, others, naming, parse, cache,
                  facts_text: str) -> CheckResult:
    started = time.perf_counter()
    if naming is None:
        module, is_package = module_name(Path(filename))
        naming = ModuleNaming(module, is_package)
    parsing = {"parse": parse} if parse is not None else {}
    facts = analyze_text(filename, naming.module, naming.is_package, source, CHECK_RULES, naming.renames, **parsing)
    others = [f for f in others if f.path != filename]
    facts = run_facts.attach([facts], run_facts.for_settings(settings), lambda _: facts_text)[0]
    if facts.wanted or facts.observed:  # calls into other files whose returned kinds decide a diagnostic: walk again
        grown = _with_libraries(settings, libraries.LibraryFinder(), None) if settings.follow_libraries else Project
        facts = returns.refine(
            [facts, *others], grown,
            lambda todo: {i: analyze_text(filename, naming.module, naming.is_package, source, CHECK_RULES,
                                          naming.renames, external, **parsing) for i, external in todo},
            only=lambda i: i == 0,  # only the buffer's diagnostics are kept
        )[0]
    if cache is not None:
        diagnostics, regions = cache.diagnose(facts, others, settings)
    else:
        finder = libraries.LibraryFinder() if settings.follow_libraries else None
        diagnostics, regions, _ = diagnose_following([facts, *others], settings, finder)
        diagnostics = [d for d in diagnostics if d.path == filename]
    return CheckResult(diagnostics, regions, 1, 0, time.perf_counter() - started, [facts])
