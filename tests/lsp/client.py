"""A real LSP client (pytest-lsp) talking to `python -m graphsafe.lsp` over stdio, and the fixtures that start it.

Imported by conftest.py; the tests import the helpers from here."""

from __future__ import annotations

import asyncio
import re
import sys
import time
from pathlib import Path

import pytest_asyncio
import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

# Generous: a 2-core CI machine may be busy with the rest of the suite.
TIMEOUT_S = 30.0

SERVER = [sys.executable, "-m", "graphsafe.lsp", "--log-level", "info"]


def client_capabilities() -> types.ClientCapabilities:
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
        workspace=types.WorkspaceClientCapabilities(
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=False),
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=False),
        ),
        text_document=types.TextDocumentClientCapabilities(
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(related_information=True, version_support=True),
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(
                        value_set=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll]
                    )
                )
            ),
        ),
    )


class Session:
    """The client plus the helpers tests need: open/change files, wait for what the server says."""

    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self.published: list[types.PublishDiagnosticsParams] = client.published

    async def initialize(self, options: dict | None = None, capabilities: types.ClientCapabilities | None = None):
        params = types.InitializeParams(
            capabilities=capabilities or client_capabilities(),
            root_uri=self.root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=self.root.as_uri(), name="ws")],
            initialization_options={"cache": False, **(options or {})},
        )
        return await asyncio.wait_for(self.client.initialize_session(params), TIMEOUT_S)

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    def write(self, name: str, text: str) -> str:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return self.uri(name)

    def open(self, name: str, text: str, language_id: str = "python") -> str:
        uri = self.uri(name)
        self.versions[uri] = 1
        self.texts[uri] = text
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)
        ))
        return uri

    def change(self, uri: str, text: str) -> int:
        self.versions[uri] = self.versions.get(uri, 0) + 1
        self.texts[uri] = text
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        ))
        return self.versions[uri]

    def apply(self, uri: str, edit: types.WorkspaceEdit) -> int:
        """Apply a workspace edit to our copy of the buffer and send it as a change (as an editor does)."""
        edits = edit.changes[uri] if edit.changes else [e for c in edit.document_changes for e in c.edits]
        return self.change(uri, apply_text_edits(self.texts[uri], edits))

    def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        return list(self.client.diagnostics.get(uri, []))

    def codes(self, uri: str) -> list[str]:
        return sorted(str(d.code) for d in self.diagnostics(uri))

    async def wait_until(self, predicate, what: str, timeout: float = TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            await asyncio.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}; diagnostics: {self.client.diagnostics}; "
                             f"log: {[m.message for m in self.client.log_messages]}")

    async def wait_for_version(self, uri: str, timeout: float = TIMEOUT_S) -> list[types.Diagnostic]:
        """Diagnostics published for the buffer's current version."""
        version = self.versions[uri]
        await self.wait_until(
            lambda: any(p.uri == uri and p.version == version for p in self.published),
            f"diagnostics of {uri} version {version}", timeout,
        )
        return self.diagnostics(uri)

    async def wait_for_index(self, timeout: float = TIMEOUT_S) -> None:
        await self.wait_until(lambda: any("indexed" in m.message for m in self.client.log_messages), "the index", timeout)


# An editor's lines: LSP ends them at \r\n, \r and \n only (not at a form feed, U+2028, ...).
_EDITOR_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (UTF-16 columns) from last to first, as an editor does."""
    lines = _EDITOR_LINES.findall(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        units = lines[position.line].encode("utf-16-le")[: 2 * position.character]
        return starts[position.line] + len(units.decode("utf-16-le"))

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(e.range.start)] + e.new_text + text[offset(e.range.end):]
    return text


def _record_diagnostics(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
    client.published.append(params)  # every publication, in order (the default keeps the last)
    client.diagnostics[params.uri] = params.diagnostics


def _client() -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    client.published = []
    features = {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: _record_diagnostics}
    register_lsp_features(client, features)
    return client


async def _stop(client: LanguageClient) -> None:
    server = client._server
    if server is not None and server.returncode is None and client.capabilities is not None:
        try:
            await asyncio.wait_for(client.shutdown_session(), TIMEOUT_S)
        except Exception:
            pass
    # pytest-lsp waits for the server to exit; a test that failed before `exit` must not hang.
    if server is not None and server.returncode is None:
        server.kill()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=_client))
async def lsp_client(lsp_client: LanguageClient):
    yield


@pytest_asyncio.fixture
async def session(lsp_client: LanguageClient, tmp_path: Path):
    """A fresh server per test, not yet initialized (the test may write files first)."""
    root = tmp_path / "ws"
    root.mkdir()
    yield Session(lsp_client, root)
    await _stop(lsp_client)


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER, client_factory=_client))
async def shared_client(lsp_client: LanguageClient):
    yield


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(shared_client: LanguageClient, tmp_path_factory):
    """One initialized server for a module's tests (each test uses its own file names)."""
    root = tmp_path_factory.mktemp("shared") / "ws"
    root.mkdir()
    current = Session(shared_client, root)
    await current.initialize()
    yield current
    await _stop(shared_client)
