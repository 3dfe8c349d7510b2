"""pygls' protocol, made to answer every request exactly once whatever the client sends.

pygls leaves a request unanswered (the client then waits forever) when its params fail
lsprotocol's schema, when it comes after `shutdown`, or when its frame is unreadable; and it
fails on a `didChange` for a document that is not open. Here each of those gets an answer or a
logged reason: a JSON-RPC error for a request, a log line for a notification.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any
from urllib.parse import unquote

import attrs
from cattrs.v import format_exception, transform_error
from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest
from pygls.protocol.language_server import lsp_method

from graphsafe.lsp import convert
from graphsafe.lsp.framing import Frame

log = logging.getLogger("graphsafe.lsp")

_FLAT_HEAD = re.compile(rb"\s*\{([^{}\[\]]*)")
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_METHOD = re.compile(rb'"method"\s*:\s*"')
_MAX_POSITION = 2**31 - 1


@attrs.define
class UnreadableRequest:
    """A request whose params do not fit the method's schema: answered with InvalidParams."""

    id: int | str
    method: str
    reason: str


def is_request_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def salvaged_request_id(body: bytes) -> int | str | None:
    """The id of the request an unreadable body held, read from its top level before any nested
    object (where an `id` could belong to the params); None when it cannot be told."""
    head = _FLAT_HEAD.match(body)
    if head is None:
        return None
    flat = head.group(1)
    found = _ID.search(flat)
    if found is None or _METHOD.search(flat) is None:  # no method: a notification's fragment or a response
        return None
    try:
        return json.loads(found.group(1))
    except ValueError:
        return None


def _describe(error: BaseException, type_: Any) -> str:
    if type(error) is ValueError and type_ not in (int, float, str):
        return str(error)  # an lsprotocol validator: its message names the field and the bound
    return format_exception(error, type_)


def schema_errors(error: BaseException) -> str:
    """cattrs' nested validation error as one line: `what @ $.params.position.line; ...`."""
    return "; ".join(transform_error(error, format_exception=_describe)) or str(error)


def _position_line(value: Any) -> int | None:
    line = value.get("line") if isinstance(value, dict) else None
    return line if isinstance(line, int) and not isinstance(line, bool) and 0 <= line <= _MAX_POSITION else None


def _is_range(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    for end in ("start", "end"):
        position = value.get(end)
        if _position_line(position) is None:
            return False
        character = position.get("character")
        if not isinstance(character, int) or isinstance(character, bool) or not 0 <= character <= _MAX_POSITION:
            return False
    return True


def _listed_diagnostic(diagnostic: Any, fallback: dict) -> dict | None:
    """What a quick fix needs of a context diagnostic (its code, source and lines), or None without a code."""
    if not isinstance(diagnostic, dict) or not is_request_id(diagnostic.get("code")):
        return None
    range_ = diagnostic.get("range")
    if not _is_range(range_):
        line = _position_line(range_.get("start")) if isinstance(range_, dict) else None
        point = {"line": line, "character": 0}
        range_ = fallback if line is None else {"start": point, "end": point}
    message = diagnostic.get("message")
    listed = {"range": range_, "message": message if isinstance(message, str) else "", "code": diagnostic["code"]}
    if isinstance(diagnostic.get("source"), str):
        listed["source"] = diagnostic["source"]
    return listed


def lenient_code_action_params(params: Any) -> Any:
    """codeAction params as the schema wants them, from what real clients send.

    Neovim 0.7 sends context diagnostics without `range` or `message`, and some clients send
    no `context`. The context only narrows which fixes are offered, so instead of refusing the
    request, each context diagnostic keeps its code and whatever line it names (else the
    request's range): the server matches its own diagnostics by code and line.
    """
    if not isinstance(params, dict):
        return params
    context = params.get("context")
    if context is None:
        context = {}
    if not isinstance(context, dict):
        return params
    diagnostics = context.get("diagnostics")
    if diagnostics is None:
        diagnostics = []
    if not isinstance(diagnostics, list):
        return params
    point = {"line": 0, "character": 0}
    fallback = params["range"] if _is_range(params.get("range")) else {"start": point, "end": point}
    listed = [d for d in (_listed_diagnostic(d, fallback) for d in diagnostics) if d is not None]
    return {**params, "context": {**context, "diagnostics": listed}}


class GraphsafeProtocol(LanguageServerProtocol):
    """pygls' protocol: every request answered once, frames read leniently, stray changes tolerated."""

    # -- frames and messages ---------------------------------------------------------------------

    def handle_frame(self, frame: Frame) -> None:
        """Handle one frame from the reader; never raises for anything the client sent."""
        if frame.problem:
            self._warn(f"malformed message frame: {frame.problem}")
        if not frame.body.strip():
            return
        try:
            data = json.loads(frame.body)
        except ValueError as error:  # JSONDecodeError, or bytes that are not UTF-8
            reason = frame.problem or f"the message is not JSON ({error})"
            self._refuse(salvaged_request_id(frame.body), types.ErrorCodes.ParseError, f"unreadable message: {reason}")
            return
        if not isinstance(data, dict) or data.get("jsonrpc") != self.VERSION:
            request_id = data.get("id") if isinstance(data, dict) and isinstance(data.get("method"), str) else None
            self._refuse(request_id if is_request_id(request_id) else None, types.ErrorCodes.InvalidRequest,
                         'not a JSON-RPC 2.0 message (no "jsonrpc": "2.0")')
            return
        try:
            message = self.structure_message(data)
            if message is not None:
                self.handle_message(message)
        except Exception as error:  # pygls could not read it (a malformed response, say)
            request_id = data.get("id") if isinstance(data.get("method"), str) else None
            self._refuse(request_id if is_request_id(request_id) else None, types.ErrorCodes.InternalError,
                         f"could not handle the message: {type(error).__name__}: {error}")

    def _warn(self, message: str) -> None:
        log.warning("%s", message)
        self._server.log_client(f"graphsafe: {message}", types.MessageType.Warning)

    def _refuse(self, request_id: int | str | None, code: int, message: str) -> None:
        """Answer a request with an error; with no id to answer, only log (a response with a null id
        has no request to go to, and some clients report it as an error of their own)."""
        if request_id is None:
            self._warn(f"ignored a message: {message}")
            return
        log.warning("request %s refused: %s", request_id, message)
        self._send_response(request_id, error=types.ResponseError(code=code, message=message))

    def structure_message(self, data: dict[str, Any]):
        """Requests and notifications of known methods, read here so a schema error is not lost:
        an unreadable request becomes an `UnreadableRequest`, an unreadable notification None."""
        method = data.get("method")
        message_type = self.get_message_type(method) if isinstance(method, str) else None
        if "result" in data or "error" in data or not isinstance(method, str):
            return super().structure_message(data)  # a response
        if message_type is None:  # an unknown method: pygls answers MethodNotFound, params or not
            return super().structure_message({"params": None, **data})
        request = "id" in data
        if request and not is_request_id(data["id"]):
            self._warn(f"ignored a {method} request with an invalid id: {data['id']!r}")
            return None
        if request and method == types.TEXT_DOCUMENT_CODE_ACTION:
            data = {**data, "params": lenient_code_action_params(data.get("params"))}
        try:
            return self._converter.structure(data, message_type)
        except Exception as error:
            reason = schema_errors(error)
            if request:
                return UnreadableRequest(id=data["id"], method=method, reason=reason)
            self._warn(f"ignored a {method} notification with invalid params: {reason}")
            return None

    def handle_message(self, message) -> None:
        request = isinstance(message, (UnreadableRequest, RPCRequest))
        if request and self._shutdown:
            # The LSP spec: after `shutdown`, every request but `exit` gets InvalidRequest.
            self._refuse(message.id, types.ErrorCodes.InvalidRequest,
                         f"{message.method}: the server is shut down and accepts only 'exit'")
            return
        if isinstance(message, UnreadableRequest):
            self._refuse(message.id, types.ErrorCodes.InvalidParams, f"{message.method}: invalid params: {message.reason}")
            return
        super().handle_message(message)

    # -- documents -------------------------------------------------------------------------------

    def _whole(self, uri: str, change):
        """A ranged change as the whole text it gives, its lines counted as the client counts them
        (graphsafe.lines): pygls would split at every `str.splitlines` break (a form feed, U+2028...)
        and apply the change that many lines off."""
        if not isinstance(change, types.TextDocumentContentChangePartial):
            return change
        document = self.workspace.get_text_document(uri)
        edit = types.TextEdit(range=change.range, new_text=change.text)
        text = convert.apply_text_edits(document.source, [edit], convert.encoding_name(self.workspace.position_encoding))
        return types.TextDocumentContentChangeWholeDocument(text=text)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        uri = params.text_document.uri
        if unquote(uri) not in self.workspace.text_documents:
            log.warning("didChange for a document that is not open: %s", uri)
            return
        try:
            for change in params.content_changes:
                self.workspace.update_text_document(params.text_document, self._whole(uri, change))
        except Exception:
            log.exception("could not apply a change to %s; the buffer may be out of sync", uri)
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None
