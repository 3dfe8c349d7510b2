"""The language server: pygls wiring, debouncing, publishing. No analysis logic here.

Threads: the asyncio loop handles the protocol (and is the only writer to stdout); one
worker thread (worker.py) owns the workspace state and runs one job at a time, buffer analyses
first and the latest edit first (a running analysis gives way to a newer one and runs again
after it); an
index thread builds the workspace index at start and after configuration changes, in
spawned processes for large folders. A result is published only if the document is still
at the version that was analysed: stale results are dropped, the newer version's own
analysis follows.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import sys
import threading
import time
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from graphsafe import __version__
from graphsafe.analyzer import run_facts
from graphsafe.analyzer.parsing import other_language
from graphsafe.lsp import actions, convert, hover, index
from graphsafe.lsp.framing import FrameReader
from graphsafe.lsp.protocol import GraphsafeProtocol
from graphsafe.lsp.settings import FACTS_FILE, facts_file_option, is_config
from graphsafe.lsp.worker import Worker
from graphsafe.lsp.workspace import Publication, WorkspaceState

log = logging.getLogger("graphsafe.lsp")

DEFAULT_DEBOUNCE_S = 0.15
SLOW_ANALYSIS_S = 1.0  # a buffer slower than this to analyse waits that long between re-analyses
MAX_DEBOUNCE_S = 5.0
# Larger buffers get a notice instead of an analysis: one worker serves every buffer, and
# a megabyte of source can take minutes, while every other buffer's diagnostics wait.
DEFAULT_MAX_LIVE_BYTES = 512 * 1024
STDIN_CHUNK = 1 << 16


class _ReaderExecutor(Executor):
    """Reads stdin where it is not a pipe (a file, a Windows console); a daemon thread, so a pending read never blocks exit."""

    def __init__(self) -> None:
        import queue

        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._run, name="graphsafe-stdin", daemon=True).start()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def _run(self) -> None:
        while True:
            future, fn, args, kwargs = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as error:
                future.set_exception(error)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


class GraphsafeServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("graphsafe", __version__, protocol_cls=GraphsafeProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.state: WorkspaceState | None = None
        self.worker: Worker | None = None
        self.debounce = DEFAULT_DEBOUNCE_S
        self.use_index = True
        self.use_cache = True
        self.max_live_bytes = DEFAULT_MAX_LIVE_BYTES
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.analysis_seconds: dict[str, float] = {}
        self.stopping = threading.Event()
        self.shutdown_received = False
        self.index_generation = 0
        self.index_job: index.IndexJob | None = None
        self._reader: _ReaderExecutor | None = None

    # -- process plumbing --------------------------------------------------------------------

    @property
    def thread_pool(self):  # type: ignore[override]
        if self._reader is None:
            self._reader = _ReaderExecutor()
        return self._reader

    def start_io(self, stdin=None, stdout=None) -> None:  # type: ignore[override]
        """Serve over stdio: frames from stdin (read by framing.py, which resynchronises after a
        malformed one, where pygls' reader would go deaf), answers to stdout."""
        stdin = stdin or sys.stdin.buffer
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def serve() -> None:
            reader = FrameReader(await self._stdin_chunks(stdin))
            async for frame in reader.frames():
                if self._stop_event.is_set():
                    break
                self.protocol.handle_frame(frame)

        try:
            asyncio.run(serve())
        except BrokenPipeError:
            log.error("the client closed the connection")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    async def _stdin_chunks(self, stdin):
        """A function returning the next bytes available on stdin (b"" at its end)."""
        loop = asyncio.get_running_loop()
        try:  # an asyncio pipe: messages reach the loop without a thread hop
            stream = asyncio.StreamReader()
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), stdin)
            return functools.partial(stream.read, STDIN_CHUNK)
        except (OSError, ValueError):  # a regular file or a Windows console: read it in a thread
            read = getattr(stdin, "read1", stdin.read)  # read1: what is there, without waiting for a full chunk
            return lambda: loop.run_in_executor(self.thread_pool, read, STDIN_CHUNK)

    def shutdown(self) -> None:
        self.stopping.set()
        self.end_children()
        if self.index_job is not None:
            self.index_job.stop()
        if self._stop_event is not None:
            self._stop_event.set()
        if self.worker is not None:
            self.worker.stop()

    def end_children(self) -> None:
        """Kill the child processes of isolated buffers (thread-safe: the worker may be waiting on one)."""
        if self.state is not None:
            self.state.isolated.end_all()

    def report_server_error(self, error: Exception, source) -> None:
        self.log_client(f"graphsafe: {getattr(source, '__name__', source)}: {error}", types.MessageType.Error)

    def log_client(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        """To stderr and to the client's log (window/logMessage), never as a pop-up."""
        (log.error if kind == types.MessageType.Error else log.info)("%s", message)
        try:
            if self.protocol.writer is not None:
                self.window_log_message(types.LogMessageParams(type=kind, message=message))
        except Exception:
            log.debug("could not send a log message", exc_info=True)

    def show_error(self, message: str) -> None:
        log.error("%s", message)
        try:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"graphsafe: {message}"))
        except Exception:
            log.debug("could not show a message", exc_info=True)

    # -- documents ---------------------------------------------------------------------------

    def open_document(self, uri: str):
        try:
            return self.workspace.text_documents.get(unquote(uri))
        except RuntimeError:  # not initialized
            return None

    def current_version(self, uri: str) -> int | None | bool:
        document = self.open_document(uri)
        return False if document is None else document.version

    @staticmethod
    def path_of(uri: str) -> str:
        try:
            path = to_fs_path(uri)
        except Exception:
            path = None
        return os.path.abspath(path) if path else uri

    def is_python(self, uri: str) -> bool:
        document = self.open_document(uri)
        if document is None:
            return False
        path = self.path_of(uri)
        if path.endswith(".pyi"):
            return False
        return path.endswith(".py") or document.language_id == "python"

    def is_analyzed(self, uri: str) -> bool:
        """Python buffers, and launch scripts (`*.sh`: the Megatron flag rules); code actions
        stay Python-only (no rule fixes a script)."""
        return self.is_python(uri) or (self.open_document(uri) is not None
                                       and other_language(self.path_of(uri)) is not None)

    def publish(self, publications: list[Publication]) -> None:
        for p in publications:
            if self.current_version(p.uri) != p.version:
                continue  # closed, or changed since: the newer version's analysis publishes
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=p.uri, diagnostics=p.diagnostics, version=p.version)
            )

    def clear(self, uri: str) -> None:
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    async def run(self, fn, *args) -> Any:
        """Run `fn(state, *args)` on the worker thread."""
        if self.worker is None or self.state is None:
            raise RuntimeError("the server is not initialized")
        return await self.worker.submit(fn, self.state, *args)

    # -- analysis ----------------------------------------------------------------------------

    def schedule(self, uri: str, delay: float) -> None:
        """(Re)start the debounce timer of `uri`; when it fires the latest version is analysed."""
        timer = self.timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        self.timers[uri] = loop.call_later(delay, self._fire, uri)

    def _fire(self, uri: str) -> None:
        self.timers.pop(uri, None)
        asyncio.ensure_future(guard_async(self, self.analyse_now, None)(uri))

    def delay_for(self, uri: str) -> float:
        seconds = self.analysis_seconds.get(uri, 0.0)
        return self.debounce if seconds < SLOW_ANALYSIS_S else max(self.debounce, min(seconds, MAX_DEBOUNCE_S))

    def too_large(self, text: str) -> int | None:
        """The buffer's size in bytes when it is over the live-analysis limit, else None."""
        if len(text) * 4 <= self.max_live_bytes:  # UTF-8 takes at most 4 bytes a character
            return None
        size = convert.units(text, convert.UTF8)
        return size if size > self.max_live_bytes else None

    def _analyse_current(self, state: WorkspaceState, uri: str, path: str, version, text: str):
        """Worker side: (publications, configuration errors met on the way, whether the index must
        be built again: the run-time facts file changed)."""
        if self.current_version(uri) != version:
            return [], [], False  # typed over while queued: skip straight to the newer version
        # the facts file is looked at whenever diagnostics are computed (an editor that does not
        # watch files still sees a new `trace --save-facts` run at the next edit)
        refreshed, reindex = state.refresh_run_facts(skip=uri)
        if (size := self.too_large(text)) is not None:
            return refreshed + state.too_large(uri, path, version, text, size, self.max_live_bytes), [], reindex
        started = time.perf_counter()
        publications = state.analyse(uri, path, version, text)  # cancellable: see worker.py
        self.analysis_seconds[uri] = time.perf_counter() - started
        return refreshed + publications, state.take_errors(), reindex

    async def analyse_now(self, uri: str) -> None:
        document = self.open_document(uri)
        if document is None or self.state is None or not self.is_analyzed(uri):
            return
        # Keyed by buffer: the latest edit is analysed first, and once (see worker.py).
        publications, errors, reindex = await self.worker.submit_latest(
            uri, ([], [], False), self._analyse_current, self.state, uri, self.path_of(uri), document.version,
            document.source
        )
        self.publish(publications)
        if reindex and self.use_index:
            await self.start_index()
        if publications:  # analysed: use the pause before the next edit (not awaited; never raises;
            # dropped when another buffer's analysis comes)
            self.worker.submit(WorkspaceState.prepare, self.state, uri, idle=True)
        for message in errors:  # a stray file's pyproject.toml, read for the first time
            self.show_error(message)

    async def refresh_run_facts(self) -> None:
        """The facts file may have been written (a watched-file event): open buffers and the
        index follow what it now says."""
        publications, reindex = await self.run(WorkspaceState.refresh_run_facts)
        self.publish(publications)
        if reindex and self.use_index:
            await self.start_index()

    async def show_config_errors(self) -> None:
        for message in await self.run(WorkspaceState.take_errors):
            self.show_error(message)

    async def reload_config(self) -> None:
        publications = await self.run(WorkspaceState.reload_settings)
        self.publish(publications)
        await self.show_config_errors()
        if self.use_index:
            await self.start_index()

    # -- the index ---------------------------------------------------------------------------

    async def start_index(self) -> None:
        if self.index_job is not None:
            self.index_job.stop()  # a newer index supersedes it
        self.index_generation += 1
        generation = self.index_generation
        projects = await self.run(lambda state: [p for p in state.projects if p.folder])
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._build_index, args=(generation, projects, loop), name="graphsafe-index",
                         daemon=True).start()

    def _build_index(self, generation: int, projects, loop: asyncio.AbstractEventLoop) -> None:
        for project in projects:
            if self.stopping.is_set() or generation != self.index_generation:
                return
            started = time.perf_counter()
            try:
                files = index.workspace_files(project.root, project.settings)
                naming = index.namings(files)
                cache = project.cache_dir() if self.use_cache else None
                self.index_job = index.IndexJob(files, project.settings.root, cache,
                                                facts_file=project.settings.facts_file)
                facts = self.index_job.run(self.stopping)
            except Exception as error:
                log.exception("indexing %s failed", project.root)
                message = f"graphsafe: indexing {project.root} failed: {type(error).__name__}: {error}"
                loop.call_soon_threadsafe(self.log_client, message, types.MessageType.Error)
                continue
            if facts is None:  # stopped
                return
            seconds = time.perf_counter() - started
            coroutine = guard_async(self, self._merge_index, None)(generation, project, files, facts, naming, seconds)
            try:
                asyncio.run_coroutine_threadsafe(coroutine, loop)
            except RuntimeError:  # the loop is gone: exiting
                coroutine.close()
                return

    async def _merge_index(self, generation: int, project, files, facts, naming, seconds: float) -> None:
        if generation != self.index_generation:
            return
        publications = await self.run(WorkspaceState.merge_index, project, files, facts, naming)
        self.publish(publications)
        self.log_client(f"graphsafe: indexed {len(facts)} files in {project.root} ({seconds:.1f} s)")

    def register_watchers(self) -> None:
        capabilities = self.client_capabilities.workspace
        watched = capabilities.did_change_watched_files if capabilities else None
        if not (watched and watched.dynamic_registration):
            return
        options = types.DidChangeWatchedFilesRegistrationOptions(watchers=[
            types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
            types.FileSystemWatcher(glob_pattern="**/*.py"),
            types.FileSystemWatcher(glob_pattern=f"**/{run_facts.DEFAULT_PATH.as_posix()}"),  # trace --save-facts
            *([types.FileSystemWatcher(glob_pattern=f"**/{Path(self.state.facts_file).name}")]
              if self.state is not None and self.state.facts_file else []),  # the editor's factsFile
        ])
        registration = types.Registration(id="graphsafe-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                          register_options=options)

        def done(future) -> None:
            if future.exception() is not None:
                self.log_client(f"graphsafe: could not watch files: {future.exception()}", types.MessageType.Warning)

        future = self.client_register_capability(types.RegistrationParams(registrations=[registration]))
        future.add_done_callback(done)


def guard(server: GraphsafeServer, default: Any):
    """Catch everything a handler raises: log it (stderr and window/logMessage), answer `default`."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as error:
                log.exception("%s failed", fn.__name__)
                server.log_client(f"graphsafe: {fn.__name__} failed: {type(error).__name__}: {error}", types.MessageType.Error)
                return default

        return wrapper

    return decorate


def guard_async(server: GraphsafeServer, fn, default: Any):
    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        try:
            return await fn(*args, **kwargs)
        except Exception as error:
            log.exception("%s failed", fn.__name__)
            server.log_client(f"graphsafe: {fn.__name__} failed: {type(error).__name__}: {error}", types.MessageType.Error)
            return default

    return wrapper


def watch_parent(pid: int, stopping: threading.Event, every_s: float = 5.0) -> None:
    """Exit when the editor that started us is gone (LSP: `processId`), rather than linger orphaned."""
    if os.name != "posix" or pid == os.getpid():
        return

    def watch() -> None:
        while not stopping.wait(every_s):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                log.error("the editor (process %s) is gone; exiting", pid)
                os._exit(1)
            except PermissionError:
                pass  # alive, owned by someone else

    threading.Thread(target=watch, name="graphsafe-parent-watch", daemon=True).start()


def _option(options: Any, *names: str, default=None):
    if not isinstance(options, dict):
        return default
    for name in names:
        if name in options:
            return options[name]
    return default


def _folders(params: types.InitializeParams) -> list[Path]:
    if params.workspace_folders:
        return [Path(p) for p in (to_fs_path(f.uri) for f in params.workspace_folders) if p]
    if params.root_uri:
        path = to_fs_path(params.root_uri)
        return [Path(path)] if path else []
    return [Path(params.root_path)] if params.root_path else []


def build_server() -> GraphsafeServer:
    server = GraphsafeServer()

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        # Synchronous on purpose: messages queued behind `initialize` must find the state.
        options = params.initialization_options
        debounce_ms = _option(options, "debounceMs", "debounce_ms")
        if isinstance(debounce_ms, (int, float)) and debounce_ms >= 0:
            server.debounce = debounce_ms / 1000
        server.use_index = bool(_option(options, "index", default=True))
        server.use_cache = bool(_option(options, "cache", default=True))
        max_live_bytes = _option(options, "maxLiveBytes", "max_live_bytes")
        if isinstance(max_live_bytes, int) and not isinstance(max_live_bytes, bool) and max_live_bytes >= 0:
            server.max_live_bytes = max_live_bytes
        facts_file, facts_error = facts_file_option(_option(options, FACTS_FILE))
        try:
            state = WorkspaceState(_folders(params), facts_file)
        except Exception:  # an unreadable folder: carry on with open buffers only
            log.exception("cannot set up the workspace folders")
            state = WorkspaceState([], facts_file)
        if facts_error:
            state.errors.append(facts_error)
        state.encoding = convert.encoding_name(server.workspace.position_encoding)
        server.state = state  # from here on, only the worker thread touches it
        server.worker = Worker(asyncio.get_running_loop())
        if params.process_id:
            watch_parent(params.process_id, server.stopping)

    @server.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        await guard_async(server, server.show_config_errors, None)()
        guard(server, None)(server.register_watchers)()
        if server.use_index:
            await server.start_index()

    @server.feature(types.SHUTDOWN)
    def shutdown(params: None) -> None:
        server.shutdown_received = True
        server.stopping.set()
        if server.index_job is not None:
            server.index_job.stop()
        for timer in server.timers.values():
            timer.cancel()
        server.timers.clear()
        server.end_children()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @guard(server, None)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        if server.state is not None and server.is_analyzed(params.text_document.uri):
            server.schedule(params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @guard(server, None)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if server.state is None or not server.is_analyzed(uri):
            return
        server.schedule(uri, server.delay_for(uri))

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    async def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if server.state is None:
            return
        if is_config(server.path_of(uri)):
            await guard_async(server, server.reload_config, None)()
        elif server.is_analyzed(uri):
            timer = server.timers.pop(uri, None)
            if timer is not None:
                timer.cancel()
            await guard_async(server, server.analyse_now, None)(uri)
            await guard_async(server, server.run, None)(WorkspaceState.saved, uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        timer = server.timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        if server.state is None:
            return

        async def close() -> None:
            publications = await server.run(WorkspaceState.closed, uri, server.path_of(uri))
            if publications is not None:
                server.clear(uri)
                server.publish(publications)

        await guard_async(server, close, None)()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        if server.state is None:
            return
        changed, deleted, config, other = [], [], False, False
        for event in params.changes:
            path = server.path_of(event.uri)
            if is_config(path):
                config = True
            elif path.endswith(".py"):
                (deleted if event.type == types.FileChangeType.Deleted else changed).append(path)
            else:
                other = True  # a run-time facts file, perhaps: refresh_run_facts compares its stamp

        async def refresh() -> None:
            if config:
                await server.reload_config()
            if changed or deleted:
                server.publish(await server.run(WorkspaceState.disk_changed, changed, deleted))
            if other:
                await server.refresh_run_facts()

        await guard_async(server, refresh, None)()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        # the `graphsafe` section of the editor's settings: {"graphsafe": {"factsFile": "..."}}
        section = _option(params.settings, "graphsafe")
        if server.state is None or not isinstance(section, dict) or FACTS_FILE not in section:
            return
        facts_file, error = facts_file_option(section[FACTS_FILE])

        async def change() -> None:
            if error:
                server.show_error(error)
            publications = await server.run(WorkspaceState.set_facts_file, facts_file)
            if publications is None:  # the same file as before
                return
            server.publish(publications)
            await server.show_config_errors()
            if server.use_index:
                await server.start_index()

        await guard_async(server, change, None)()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
        if server.state is None:
            return

        def change(state: WorkspaceState) -> None:
            for folder in params.event.removed:
                if path := to_fs_path(folder.uri):
                    state.remove_folder(Path(path))
            for folder in params.event.added:
                if path := to_fs_path(folder.uri):
                    state.add_folder(Path(path))

        async def refresh() -> None:
            await server.run(change)
            await server.show_config_errors()
            if server.use_index:
                await server.start_index()

        await guard_async(server, refresh, None)()

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @guard(server, None)
    def on_hover(params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        document = server.open_document(uri)
        if document is None or server.state is None:
            return None
        text = document.source
        lines = convert.split_lines(text)
        encoding = server.state.encoding
        position = convert.from_client(lines, params.position, encoding)
        analysed = server.state.documents.get(uri)
        diagnostics = analysed.diagnostics if analysed is not None and analysed.text == text else ()
        found = hover.hover_markdown(lines, position, diagnostics)
        if found is None:
            return None
        markdown, (start, end) = found
        return hover.to_hover(markdown, convert.to_range(lines, start, end, encoding))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL]),
    )
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        document = server.open_document(uri)
        if document is None or server.state is None or not server.is_python(uri) or server.too_large(document.source):
            return None  # a buffer over the limit is not analysed, not even for its actions
        capabilities = server.client_capabilities.workspace
        edit_caps = capabilities.workspace_edit if capabilities else None
        versioned = bool(edit_caps and edit_caps.document_changes)
        only = [getattr(k, "value", k) for k in (params.context.only or [])] or None
        job = functools.partial(_code_actions, server=server, versioned=versioned, only=only,
                                listed=params.context.diagnostics)
        result = await guard_async(server, server.run, None)(
            job, uri, server.path_of(uri), document.version, document.source, params.range
        )
        if result is None:
            return None
        found, publications = result
        server.publish(publications)
        return found or None

    @server.feature(types.EXIT)
    def on_exit(params: None) -> None:
        server.stopping.set()
        server.end_children()
        if server.worker is not None:
            server.worker.stop()

    return server


def _code_actions(state: WorkspaceState, uri: str, path: str, version, text: str, request: types.Range, *,
                  server: GraphsafeServer, versioned: bool, only: list[str] | None, listed: list[types.Diagnostic]):
    """Worker-side: make sure `text` is analysed, then build the actions for `request`."""
    from graphsafe.fixer import fix_text

    publications: list[Publication] = []
    analysed = state.documents.get(uri)
    if analysed is None or analysed.text != text:
        publications = state.analyse(uri, path, version, text)
        analysed = state.documents[uri]
    lines = list(analysed.lines)

    def reject(why: str) -> None:
        server.log_client(f"graphsafe: {path}: {why}", types.MessageType.Warning)

    found = actions.diagnostic_actions(
        uri, version, text, lines, analysed.diagnostics, request, state.encoding,
        only=only, versioned=versioned, uri_of=state.uri_of, listed=listed, reject=reject,
    )
    fix_all_asked = only is not None and actions.kind_wanted(actions.FIX_ALL, only)
    if fix_all_asked or (only is None and actions.has_safe_fix(analysed.diagnostics)):
        settings, others, naming = state.context(path)
        outcome = fix_text(text, path, settings, others, False, naming)
        if outcome.error:
            server.log_client(f"graphsafe: {path}: {outcome.error}", types.MessageType.Warning)
        else:
            action = actions.fix_all_action(uri, version, text, outcome.fixed, state.encoding, versioned=versioned,
                                            reject=reject)
            if action is not None:
                found.append(action)
    return found, publications


def _protocol_streams():
    """The real stdout for the protocol; fd 1 and sys.stdout then lead to stderr.

    Whatever else prints (a stray print, a C extension, a child process) cannot corrupt
    the message stream.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return sys.stdin.buffer, os.fdopen(protocol_fd, "wb")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="graphsafe lsp", description="graphsafe language server (LSP over stdio)")
    parser.add_argument("--stdio", action="store_true", help="accepted for editor clients; stdio is the only transport")
    parser.add_argument("--log-level", choices=("error", "warning", "info", "debug"), default="warning")
    args = parser.parse_args(argv)
    level = getattr(logging, args.log_level.upper())
    logging.basicConfig(stream=sys.stderr, level=level, format="graphsafe-lsp %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls").setLevel(max(level, logging.WARNING))
    stdin, stdout = _protocol_streams()
    server = build_server()
    server.start_io(stdin, stdout)
    return 0 if server.shutdown_received else 1
