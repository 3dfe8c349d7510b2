"""What the server knows about the workspace, owned by its single worker thread.

A *project* is a workspace folder: its settings and the index (facts of its files on disk).
Open buffers overlay the index: a changed buffer is re-analysed alone (parse + walk; the
parse reuses the statements the edit did not touch, analyzer/incremental.py) and the
project-level step (regions, call graph, reachability) runs over the index plus the overlay,
which costs milliseconds, and is reused while an edit changes only the buffer's hits
(engine.ProjectCache). When a buffer's units, calls or classes change, the other open
buffers of its project are re-diagnosed from their stored facts (no re-parse), because a
region or a callee in one file changes what another file reports.

Big and deeply nested buffers (limits.needs_isolation) are analysed in a child process of their
own (isolation.py), which keeps their syntax tree instead: libcst's whole-file parse of such a
buffer would hold the worker for seconds, and could take gigabytes, in this process.

Every method here runs on the worker thread (see worker.py), so nothing needs a lock; the
event loop only reads `documents` entries, which are replaced whole.
"""

from __future__ import annotations

import fnmatch
import gc
import logging
import os
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from graphsafe.analyzer.discovery import DEFAULT_EXCLUDE, ModuleNaming, module_name
from graphsafe.analyzer import limits, run_facts
from graphsafe.analyzer.engine import ProjectCache, check_source, diagnose, shape_of
from graphsafe.analyzer.facts import FileFacts
from graphsafe.analyzer.incremental import IncrementalParser
from graphsafe.config import Settings
from graphsafe.lsp import convert, index
from graphsafe.lsp.isolation import IsolatedBuffers, parse_in_child
from graphsafe.lsp.settings import resolve
from graphsafe.model import Diagnostic, Position
from graphsafe.rules.parse_error import ParseError

log = logging.getLogger("graphsafe.lsp")

# Buffers up to this size keep their syntax tree between edits (analyzer/incremental.py).
INCREMENTAL_MAX_CHARS = 512 * 1024


@dataclass
class Project:
    root: Path  # the workspace folder (or, for files outside every folder, their directory)
    settings: Settings
    indexed: dict[str, FileFacts] = field(default_factory=dict)  # absolute path → facts on disk
    ready: bool = False  # the index has been built
    folder: bool = True  # a workspace folder (indexed) rather than a stray file's directory
    files: list[Path] = field(default_factory=list)  # what the index was built from
    naming: dict[str, ModuleNaming] = field(default_factory=dict)  # module names among `files`
    others_naming: dict[str, ModuleNaming] = field(default_factory=dict)  # buffers outside `files`
    facts_stamp: tuple | None = None  # the run-time facts file as last read (run_facts.file_stamp)

    def contains(self, path: str) -> bool:
        return path == str(self.root) or path.startswith(str(self.root).rstrip(os.sep) + os.sep)

    def cache_dir(self) -> Path:
        return self.settings.root / ".graphsafe_cache"

    def naming_of(self, path: str) -> ModuleNaming | None:
        """The file's module name as the index names it (None before the index: the engine's default)."""
        if not self.ready or not os.path.isabs(path):
            return None
        naming = self.naming.get(path) or self.others_naming.get(path)
        if naming is None:
            naming = self.others_naming[path] = index.naming_among(path, self.files)
        return naming


@dataclass(frozen=True)
class Analysed:
    """An open buffer as last analysed."""

    uri: str
    path: str
    version: int | None
    text: str
    lines: tuple[str, ...]
    facts: FileFacts
    diagnostics: tuple[Diagnostic, ...]
    naming: ModuleNaming | None = None


@dataclass(frozen=True)
class Publication:
    uri: str
    version: int | None
    diagnostics: list[types.Diagnostic]


def included(path: Path, project: Project) -> bool:
    """Would indexing the project pick up this file? (default and configured excludes)."""
    if path.suffix != ".py":
        return False
    settings = project.settings
    patterns = DEFAULT_EXCLUDE + tuple(settings.exclude) + tuple(settings.extend_exclude)
    try:
        rel = path.relative_to(settings.root).as_posix()
    except ValueError:
        rel = path.name
    parts = rel.split("/")
    for i in range(len(parts)):
        prefix = "/".join(parts[: i + 1])
        for pattern in patterns:
            if fnmatch.fnmatch(parts[i], pattern) or fnmatch.fnmatch(prefix, pattern.rstrip("/")):
                return False
    return True


class WorkspaceState:
    def __init__(self, folders: list[Path], facts_file: str | None = None) -> None:
        self.encoding = convert.UTF16
        self.facts_file = facts_file  # the editor's `factsFile` setting (lsp/settings.py); None: the default
        self.projects: list[Project] = []
        self.stray: dict[str, Project] = {}
        self.documents: dict[str, Analysed] = {}  # uri → last analysis of an open buffer
        self.parsers: dict[str, IncrementalParser] = {}  # uri → its syntax tree, updated per edit
        self.steps: dict[str, ProjectCache] = {}  # uri → its last project step, reused while its calls stay
        self.isolated = IsolatedBuffers()  # the children of big and deeply nested buffers
        self.errors: list[str] = []  # configuration errors not yet shown
        for folder in folders:
            self.add_folder(folder)

    # -- projects and settings ---------------------------------------------------------------

    def add_folder(self, folder: Path) -> Project:
        folder = Path(os.path.abspath(folder))
        resolved = resolve(folder, facts_file=self.facts_file)
        if resolved.error:
            self.errors.append(resolved.error)
        project = Project(folder, resolved.settings, facts_stamp=run_facts.file_stamp(resolved.settings))
        self.projects.append(project)
        self.projects.sort(key=lambda p: len(str(p.root)), reverse=True)  # innermost folder first
        return project

    def remove_folder(self, folder: Path) -> None:
        folder = Path(os.path.abspath(folder))
        self.projects = [p for p in self.projects if p.root != folder]

    def project_for(self, path: str) -> Project:
        for project in self.projects:
            if project.contains(path):
                return project
        directory = os.path.dirname(path) if os.path.isabs(path) else os.getcwd()
        project = self.stray.get(directory)
        if project is None:
            resolved = resolve(Path(directory), facts_file=self.facts_file)
            if resolved.error:
                self.errors.append(resolved.error)
            project = Project(Path(directory), resolved.settings, ready=True, folder=False,
                              facts_stamp=run_facts.file_stamp(resolved.settings))
            self.stray[directory] = project
        return project

    def set_facts_file(self, facts_file: str | None) -> list[Publication] | None:
        """The editor's `factsFile` setting: when it changed, settings again and open buffers
        analysed again; None when it is the one in force."""
        if facts_file == self.facts_file:
            return None
        self.facts_file = facts_file
        return self.reload_settings()

    def reload_settings(self) -> list[Publication]:
        """Re-read every project's configuration (a pyproject.toml changed); errors go to `errors`."""
        rebuild = []
        publications: list[Publication] = []
        for project in [*self.projects, *self.stray.values()]:
            resolved = resolve(project.root, fallback=project.settings, facts_file=self.facts_file)
            if resolved.error:
                self.errors.append(resolved.error)
            if resolved.settings.facts_file != project.settings.facts_file:
                # other run-time facts: the buffers' walks depend on them, not only their diagnosis
                project.settings = resolved.settings
                project.facts_stamp = run_facts.file_stamp(project.settings)
                for document in [d for d in self.documents.values() if self.project_for(d.path) is project]:
                    publications.extend(self.analyse(document.uri, document.path, document.version, document.text))
            if resolved.settings != project.settings:
                excluded = (project.settings.exclude, project.settings.extend_exclude, project.settings.respect_gitignore)
                project.settings = resolved.settings
                now = (project.settings.exclude, project.settings.extend_exclude, project.settings.respect_gitignore)
                if project.folder and excluded != now:
                    rebuild.append(project)
        for project in rebuild:
            project.indexed = {p: f for p, f in project.indexed.items() if included(Path(p), project)}
        return _latest(publications + self.rediagnose(None))

    def refresh_run_facts(self, skip: str | None = None) -> tuple[list[Publication], bool]:
        """A project's run-time facts file written (or removed) since it was read (`graphsafe trace
        --save-facts` ran again): its open buffers analysed again with what it now says, except
        `skip` (about to be analysed anyway). (publications, whether a workspace folder's index
        must be built again: its files' facts hold the old run's.)"""
        publications: list[Publication] = []
        reindex = False
        for project in [*self.projects, *self.stray.values()]:
            stamp = run_facts.file_stamp(project.settings)
            if stamp == project.facts_stamp:
                continue
            project.facts_stamp = stamp
            reindex = reindex or project.folder
            for document in [d for d in self.documents.values() if d.uri != skip and self.project_for(d.path) is project]:
                publications.extend(self.analyse(document.uri, document.path, document.version, document.text))
        return _latest(publications), reindex

    # -- the index ---------------------------------------------------------------------------

    def merge_index(self, project: Project, files: list[Path], facts: dict[str, FileFacts],
                    naming: dict[str, ModuleNaming]) -> list[Publication]:
        project.files, project.naming, project.others_naming = files, naming, {}
        project.indexed = dict(facts)
        project.ready = True
        publications: list[Publication] = []
        for document in list(self.documents.values()):
            # A buffer analysed before the index knew its module name: analyse it again, named.
            if self.project_for(document.path) is project and document.naming != project.naming_of(document.path):
                publications.extend(self.analyse(document.uri, document.path, document.version, document.text))
        publications.extend(self.rediagnose(project))
        # The index lives as long as the server: keep the cyclic GC from re-scanning it on
        # every full collection that a parse triggers (no syntax tree is alive here).
        gc.collect()
        gc.freeze()
        return publications

    def disk_changed(self, paths: list[str], deleted: list[str]) -> list[Publication]:
        """Files changed on disk (outside the editor, or saved and closed): refresh the index."""
        touched: set[int] = set()
        for path in deleted:
            for project in self.projects:
                if project.indexed.pop(path, None) is not None:
                    touched.add(id(project))
        for path in paths:
            project = self.project_for(path)
            if not project.folder or not included(Path(path), project) or not os.path.isfile(path):
                continue
            if any(d.path == path for d in self.documents.values()):
                continue  # an open buffer overrides the disk; its own analysis covers it
            naming = project.naming_of(path) or ModuleNaming(*module_name(Path(path)))
            project.indexed[path] = index.read_facts(path, naming, project.settings)
            touched.add(id(project))
        publications: list[Publication] = []
        for project in self.projects:
            if id(project) in touched:
                publications.extend(self.rediagnose(project))
        return publications

    # -- buffers -----------------------------------------------------------------------------

    def _facts(self, project: Project, skip: str | None = None) -> list[FileFacts]:
        overlay = {d.path: d.facts for d in self.documents.values() if project.contains(d.path) or d.path in project.indexed}
        merged = {**project.indexed, **overlay}
        if skip is not None:
            merged.pop(skip, None)
        return list(merged.values())

    def uri_of(self, path: str) -> str | None:
        for document in self.documents.values():
            if document.path == path:
                return document.uri
        return from_fs_path(path) if os.path.isabs(path) else None

    def _publication(self, document: Analysed) -> Publication:
        lines = list(document.lines)
        items = [convert.to_diagnostic(d, lines, self.encoding, self.uri_of) for d in document.diagnostics]
        return Publication(document.uri, document.version, items)

    def analyse(self, uri: str, path: str, version: int | None, text: str) -> list[Publication]:
        """Analyse one buffer against the rest of its project; publish it and any file it affects."""
        project = self.project_for(path)
        previous = self.documents.get(uri)
        naming = project.naming_of(path)
        isolation = nullcontext()
        if limits.needs_isolation(text):  # analysed in the buffer's child, which keeps its tree
            self.parsers.pop(uri, None)
            parse, isolation = parse_in_child, limits.isolated(self.isolated.runner(uri))
        else:
            self.isolated.end(uri)
            if len(text) <= INCREMENTAL_MAX_CHARS:
                parse = self.parsers.setdefault(uri, IncrementalParser()).parse
            else:  # a tree kept per buffer costs ~80 bytes per character
                self.parsers.pop(uri, None)
                parse = None
        with isolation:
            result = check_source(text, path, project.settings, self._facts(project, skip=path), naming=naming,
                                  parse=parse, cache=self.steps.setdefault(uri, ProjectCache()))
        facts = result.facts[0]
        document = Analysed(uri, path, version, text, tuple(convert.split_lines(text)), facts, tuple(result.diagnostics),
                            naming)
        self.documents[uri] = document
        publications = [self._publication(document)]
        # Other files see only this one's units, calls and classes, not its hits.
        if previous is None or (previous.facts != facts and shape_of(previous.facts) != shape_of(facts)):
            publications.extend(self.rediagnose(project, skip=uri))
        return publications

    def too_large(self, uri: str, path: str, version: int | None, text: str, size: int, limit: int) -> list[Publication]:
        """A buffer over the live-analysis limit: one notice instead of its diagnostics, and the
        rest of the project sees the file as it is on disk (through the index)."""
        previous = self.documents.pop(uri, None)
        self.parsers.pop(uri, None)
        self.steps.pop(uri, None)
        self.isolated.end(uri)
        detail = (f"buffer too large for live analysis: {size} bytes > {limit}; "
                  f"run `graphsafe check {os.path.basename(path)}` (or raise the maxLiveBytes server option)")
        notice = Diagnostic(ParseError.code, detail, path, Position(1, 0), Position(1, 0))
        start = convert.split_lines(text[:80])[:1]  # the notice sits at the start of the first line
        publications = [Publication(uri, version, [convert.to_diagnostic(notice, start, self.encoding, self.uri_of)])]
        if previous is not None:  # its buffer no longer overlays the index
            publications.extend(self.rediagnose(self.project_for(path)))
        return publications

    def prepare(self, uri: str) -> None:
        """Idle time after an analysis: get the buffer's parser ready for the next edit. Runs
        under limits.run_limited, so that another buffer's analysis can cancel it (the worker
        submits it as an idle job); the parser keeps what was computed before the cancellation."""
        parser = self.parsers.get(uri)
        if parser is not None:
            try:
                limits.run_limited(parser.prepare)
            except (Exception, limits.CpuTimeExceeded):  # only a head start: the next edit computes what it needs
                log.debug("preparing the parser of %s failed", uri, exc_info=True)

    def rediagnose(self, project: Project | None, skip: str | None = None) -> list[Publication]:
        """Diagnostics of the open buffers (of `project`, or of all) from stored facts; only changed ones."""
        publications: list[Publication] = []
        projects = [project] if project is not None else [*self.projects, *self.stray.values()]
        for current in projects:
            open_here = [d for d in self.documents.values() if d.uri != skip and self.project_for(d.path) is current]
            if not open_here:
                continue
            found, _ = diagnose(self._facts(current), current.settings)
            by_path: dict[str, list[Diagnostic]] = {}
            for d in found:
                by_path.setdefault(d.path, []).append(d)
            for document in open_here:
                diagnostics = tuple(by_path.get(document.path, ()))
                if diagnostics == document.diagnostics:
                    continue
                updated = replace(document, diagnostics=diagnostics)
                self.documents[document.uri] = updated
                publications.append(self._publication(updated))
        return publications

    def saved(self, uri: str) -> None:
        document = self.documents.get(uri)
        if document is None:
            return
        project = self.project_for(document.path)
        if project.folder and included(Path(document.path), project):
            project.indexed[document.path] = document.facts  # the disk now holds the buffer

    def closed(self, uri: str, path: str) -> list[Publication] | None:
        """The buffer is gone: the index falls back to the file on disk (unsaved edits vanish).

        None when the document was never open here (a client's mistake, ignored).
        """
        document = self.documents.pop(uri, None)
        self.parsers.pop(uri, None)
        self.steps.pop(uri, None)
        self.isolated.end(uri)
        if document is None:
            return None
        project = self.project_for(path)
        if not project.folder:
            return self.rediagnose(project)
        if os.path.isfile(path) and included(Path(path), project):
            return self.disk_changed([path], [])
        return self.disk_changed([], [path]) if path in project.indexed else self.rediagnose(project)

    def context(self, path: str) -> tuple[Settings, list[FileFacts], ModuleNaming | None]:
        """What analysing `path` needs besides its text: settings, the rest of the project, its module name."""
        project = self.project_for(path)
        return project.settings, self._facts(project, skip=path), project.naming_of(path)

    def take_errors(self) -> list[str]:
        errors, self.errors = self.errors, []
        return errors


def _latest(publications: list[Publication]) -> list[Publication]:
    """One publication per buffer: its last."""
    return list({p.uri: p for p in publications}.values())
