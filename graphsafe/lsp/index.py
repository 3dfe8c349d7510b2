"""The workspace index: facts of every Python file of a folder, off the editor's critical path.

Module names depend on the whole set of files (two script folders that both hold a
`model.py` get prefixed names, `discovery.module_names`), so a folder is indexed in one
`collect_facts` call over all its files, and a buffer or a file changed on disk later is
analysed with the name it has among them. The engine names files relative to the process's
cwd; the index renames every file to its absolute path, so buffers (named by their URI's
path), regions and chains all agree.

Large folders are indexed in a *spawned* helper process (it may fork its own pool; forking
the server, which runs an event loop and threads, is unsafe), whose stdout points at stderr
so that nothing it prints can corrupt the protocol stream.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading
from dataclasses import replace
from pathlib import Path

from graphsafe.analyzer.cache import FactsCache
from graphsafe.analyzer.discovery import ModuleNaming, discover, module_names
from graphsafe.analyzer import run_facts
from graphsafe.analyzer.engine import collect_facts
from graphsafe.analyzer.facts import FileFacts
from graphsafe.analyzer.parsing import analyze_bytes, error_facts
from graphsafe.analyzer.reading import read_source
from graphsafe.config import Settings
from graphsafe.rules import CHECK_RULES

log = logging.getLogger("graphsafe.lsp")

PROCESS_MIN_FILES = 64  # below this, starting a helper interpreter costs more than it saves


def workspace_files(folder: Path, settings: Settings) -> list[Path]:
    exclude = tuple(settings.exclude) + tuple(settings.extend_exclude)
    files = discover([folder], root=settings.root, exclude=exclude, respect_gitignore=settings.respect_gitignore)
    return [Path(os.path.abspath(f)) for f in files]


def namings(files: list[Path]) -> dict[str, ModuleNaming]:
    """Each file's module name among `files` (the same names `collect_facts` gives them)."""
    return {str(path): naming for path, naming in module_names(files, Path.cwd()).items()}


def naming_among(path: str, files: list[Path]) -> ModuleNaming:
    """The module name of a file that is not in the index (new, excluded, unsaved), among the index's files."""
    return module_names([*files, Path(path)], Path.cwd())[Path(path)]


def with_path(facts: FileFacts, path: str) -> FileFacts:
    """`facts` named by `path` (its GS000 diagnostics too)."""
    if facts.path == path:
        return facts
    return replace(facts, path=path, errors=tuple(replace(e, path=path) for e in facts.errors))


def read_facts(path: str, naming: ModuleNaming, settings: Settings | None = None) -> FileFacts:
    """One file from disk (changed outside the editor, or closed unsaved), named as in its project,
    with the run-time facts of its unchanged functions (the settings' facts file)."""
    content = read_source(Path(path))  # regular files only, size-capped: a FIFO must not block the server
    if isinstance(content, str):
        return error_facts(path, naming.module, content)
    facts = analyze_bytes(path, naming.module, naming.is_package, content, CHECK_RULES, naming.renames)
    observed = run_facts.for_settings(settings) if settings is not None else None
    return run_facts.attach([facts], observed, lambda _: content.decode("utf-8", "surrogateescape"))[0]


def _collect(paths: list[str], root: str, cache_dir: str | None, jobs: int, freeze: bool,
             facts_file: str | None = None) -> list[FileFacts]:
    """`freeze`: only in the short-lived helper process; in the server's own process the index
    is frozen after a full collection (Workspace.merge_index), so no cyclic garbage is kept.
    `facts_file`: the editor's `factsFile`; None: <root>/.graphsafe/facts.json, if any."""
    cache = FactsCache(Path(cache_dir)) if cache_dir else None
    observed = run_facts.for_settings(Settings(root=Path(root), facts_file=Path(facts_file) if facts_file else None))
    facts, _ = collect_facts([Path(p) for p in paths], Path(root), jobs=jobs, cache=cache, freeze=freeze,
                             observed=observed)
    return [with_path(f, p) for f, p in zip(facts, paths)]


def _helper(connection, paths: list[str], root: str, cache_dir: str | None, jobs: int, facts_file: str | None) -> None:
    os.dup2(2, 1)  # never the protocol's stdout
    sys.stdout = sys.stderr
    try:
        connection.send(("ok", _collect(paths, root, cache_dir, jobs, freeze=True, facts_file=facts_file)))
    except BaseException as error:  # reported by the server, never a silent hang
        connection.send(("error", f"{type(error).__name__}: {error}"))
    finally:
        connection.close()


class IndexJob:
    """Facts of a folder's files, in this thread (small folders) or in a helper process."""

    def __init__(self, files: list[Path], root: Path, cache_dir: Path | None, jobs: int | None = None,
                 facts_file: Path | None = None) -> None:
        self.paths = [str(p) for p in files]
        self.root = str(root)
        self.facts_file = str(facts_file) if facts_file is not None else None
        self.cache = str(cache_dir) if cache_dir else None
        self.jobs = jobs if jobs is not None else max(1, (os.cpu_count() or 1) - 1)
        self._process = None
        self._lock = threading.Lock()
        self._stopped = False

    def run(self, stop: threading.Event) -> dict[str, FileFacts] | None:
        """The facts by absolute path; None when stopped."""
        if len(self.paths) < PROCESS_MIN_FILES or self.jobs <= 1:
            return dict(zip(self.paths, _collect(self.paths, self.root, self.cache, 1, freeze=False,
                                                 facts_file=self.facts_file)))
        context = multiprocessing.get_context("spawn")
        receiver, sender = context.Pipe(duplex=False)
        with self._lock:
            if self._stopped:
                return None
            self._process = context.Process(target=_helper, args=(sender, self.paths, self.root, self.cache, self.jobs,
                                                                          self.facts_file),
                                            name="graphsafe-index")
            self._process.start()
        sender.close()
        try:
            while not receiver.poll(0.2):
                if stop.is_set() or self._stopped:
                    self.stop()
                    return None
                if not self._process.is_alive():
                    raise RuntimeError(f"the indexing process exited with code {self._process.exitcode}")
            status, value = receiver.recv()
        finally:
            receiver.close()
            self._process.join(timeout=5)
        if status != "ok":
            raise RuntimeError(value)
        return dict(zip(self.paths, value))

    def stop(self) -> None:
        """End the helper process now (shutdown must not wait for a large folder's index)."""
        with self._lock:
            self._stopped = True
            if self._process is not None and self._process.is_alive():
                self._process.terminate()
