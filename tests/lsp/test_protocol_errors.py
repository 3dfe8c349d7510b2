"""Every request is answered exactly once, whatever the client sends: raw frames to `python -m graphsafe.lsp`.

Out-of-schema params, requests after `shutdown` and malformed frames used to get no answer at
all (the client waited forever, or the server went deaf to everything after). Each wait here
has a timeout, so a missing answer fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from tests.lsp.client import TIMEOUT_S

ITEM = "import torch\n\n\ndef step(x: torch.Tensor):  # graphsafe: region\n    return x.item()\n"
ITEM_LINE = 4  # `    return x.item()`: GS101 at columns 11-19

INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, PARSE_ERROR = -32600, -32601, -32602, -32700


def frame(message: dict | bytes, length: int | None = None) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body) if length is None else length, body)


class RawServer:
    """The server as a subprocess, spoken to in raw bytes; what it sends is collected by a thread."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.stderr = (root / "server.log").open("w+b")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graphsafe.lsp", "--log-level", "info"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, cwd=Path.cwd(),
        )
        self.incoming: queue.Queue = queue.Queue()
        self.responses: list[dict] = []
        self.notifications: list[dict] = []
        self.next_id = 100
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stdout = self.process.stdout
        while True:
            length = None
            while (line := stdout.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line or length is None:
                self.incoming.put(None)
                return
            self.incoming.put(json.loads(stdout.read(length)))

    def send(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def request(self, method: str, params=None, *, message_id=None) -> int | str:
        message_id = self._new_id() if message_id is None else message_id
        message = {"jsonrpc": "2.0", "id": message_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(frame(message))
        return message_id

    def notify(self, method: str, params=None) -> None:
        self.send(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def wait_for(self, found, what: str, timeout: float = TIMEOUT_S):
        """The first message `found` returns for; fails (never hangs) when none comes."""
        while True:
            for message in self.responses + self.notifications:
                if found(message):
                    return message
            try:
                message = self.incoming.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no {what} within {timeout} s; log:\n{self.log()}")
            if message is None:
                raise AssertionError(f"the server closed stdout before {what}; log:\n{self.log()}")
            (self.notifications if "method" in message else self.responses).append(message)

    def response(self, message_id) -> dict:
        return self.wait_for(lambda m: "method" not in m and m.get("id") == message_id, f"response to {message_id!r}")

    def call(self, method: str, params=None) -> dict:
        return self.response(self.request(method, params))

    def initialize(self) -> None:
        params = {"processId": None, "capabilities": {}, "rootUri": self.root.as_uri(),
                  "initializationOptions": {"index": False, "cache": False}}
        assert "result" in self.call("initialize", params)
        self.notify("initialized", {})

    def open(self, name: str, text: str) -> str:
        """Open a buffer and wait for its diagnostics (hover and actions then see the analysis)."""
        uri = (self.root / name).as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
        self.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri,
                      f"diagnostics of {uri}")
        return uri

    def log(self) -> str:
        self.stderr.flush()
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def answered_once(self) -> None:
        counts = Counter(json.dumps(r.get("id")) for r in self.responses)
        assert all(n == 1 for n in counts.values()), f"answered more than once: {counts}"

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(TIMEOUT_S)
        self.stderr.close()


def started(root: Path):
    """An initialized server with ITEM open as item.py; at the end, no request was answered twice."""
    raw = RawServer(root)
    try:
        raw.initialize()
        raw.uri = raw.open("item.py", ITEM)
        yield raw
        raw.answered_once()
    finally:
        raw.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One server for the tests that leave the stream in step (requests with bad params)."""
    yield from started(tmp_path_factory.mktemp("protocol"))


@pytest.fixture
def server(tmp_path: Path):
    """A fresh server: for tests that end it or send malformed frames."""
    yield from started(tmp_path)


def cursor(line: int, character: int = 0) -> dict:
    point = {"line": line, "character": character}
    return {"start": point, "end": point}


def titles(response: dict) -> list[str]:
    return [action["title"] for action in response["result"] or []]


def hover_at(uri: str, position) -> dict:
    return {"textDocument": {"uri": uri}, "position": position}


# -- params outside lsprotocol's schema -------------------------------------------------------------


@pytest.mark.parametrize("listed", [
    [{"code": "GS101"}],  # Neovim 0.7: neither range nor message
    [{"code": "GS101", "message": "x"}],
    [{"code": "GS101", "range": {"start": {"line": ITEM_LINE}}}],  # half a range: its line still counts
    [{"code": "GS101", "range": cursor(ITEM_LINE), "severity": 1, "source": "graphsafe"}],  # no message
])
def test_code_action_with_context_diagnostics_lacking_range_or_message_gets_quick_fixes(shared: RawServer, listed):
    # The cursor sits at column 0, away from the diagnostic's columns: only the listed code and line lead to it.
    response = shared.call("textDocument/codeAction", {
        "textDocument": {"uri": shared.uri}, "range": cursor(ITEM_LINE), "context": {"diagnostics": listed}})
    assert titles(response) == ["Disable GS101 for this line"]
    [action] = response["result"]
    assert action["diagnostics"][0]["range"]["start"] == {"line": ITEM_LINE, "character": 11}


def test_context_diagnostics_match_ours_by_code_and_line_only(shared: RawServer):
    def actions(listed, line=ITEM_LINE) -> list[str]:
        return titles(shared.call("textDocument/codeAction", {
            "textDocument": {"uri": shared.uri}, "range": cursor(line), "context": {"diagnostics": listed}}))

    assert actions([{"code": "GS101"}]) == ["Disable GS101 for this line"]
    assert actions([{"code": "GS999"}]) == []  # another code
    assert actions([{"code": "GS101", "range": {"start": {"line": 2}}}]) == []  # another line
    assert actions([{"code": "GS101", "source": "pyright"}]) == []  # another server's diagnostic
    assert actions([{"message": "no code"}]) == []
    assert actions([{"code": "GS101"}], line=1) == []  # the request's own lines bound what is matched


@pytest.mark.parametrize("context", ["missing", None, {}, {"diagnostics": None}])
def test_code_action_without_context_is_answered_with_the_actions_under_the_range(shared: RawServer, context):
    params = {"textDocument": {"uri": shared.uri}, "range": cursor(ITEM_LINE, 12)}
    if context != "missing":
        params["context"] = context
    assert titles(shared.call("textDocument/codeAction", params)) == ["Disable GS101 for this line"]


@pytest.mark.parametrize("position, reason", [
    ({"line": -1, "character": 0}, "Position.line should be in range [0:2147483647], but was -1"),
    ({"line": 2**31, "character": 0}, "but was 2147483648"),
    ({"line": 0, "character": -5}, "Position.character should be in range"),
    ({"line": "x", "character": 0}, "expected int @ $.params.position.line"),
    ({"character": 0}, "required field missing @ $.params.position.line"),
    (None, "$.params.position"),
])
def test_hover_with_an_invalid_position_gets_invalid_params_with_the_reason(shared: RawServer, position, reason):
    response = shared.call("textDocument/hover", hover_at(shared.uri, position))
    assert response["error"]["code"] == INVALID_PARAMS
    assert response["error"]["message"].startswith("textDocument/hover: invalid params: ")
    assert reason in response["error"]["message"]
    assert "result" not in response


@pytest.mark.parametrize("params", [
    {"textDocument": {"uri": "file:///x.py"}, "range": cursor(-1), "context": {"diagnostics": []}},
    {"textDocument": {"uri": "file:///x.py"}, "range": {"start": {"line": "x", "character": 0}}},
    {"textDocument": {"uri": "file:///x.py"}, "range": cursor(0), "context": {"diagnostics": "all"}},
    {"range": cursor(0), "context": {"diagnostics": []}},
    None,
])
def test_code_action_with_invalid_params_gets_invalid_params(shared: RawServer, params):
    response = shared.call("textDocument/codeAction", params)
    assert response["error"]["code"] == INVALID_PARAMS
    assert response["error"]["message"].startswith("textDocument/codeAction: invalid params: ")


def test_the_server_keeps_answering_after_invalid_params(shared: RawServer):
    for line in (-1, "x", 2**40):
        assert shared.call("textDocument/hover", hover_at(shared.uri, {"line": line, "character": 0}))["error"]
    hover = shared.call("textDocument/hover", hover_at(shared.uri, {"line": ITEM_LINE, "character": 13}))
    assert "GS101" in hover["result"]["contents"]["value"]


def test_an_unknown_method_without_params_gets_method_not_found(shared: RawServer):
    assert shared.call("graphsafe/unknown")["error"]["code"] == METHOD_NOT_FOUND


def test_a_request_without_the_jsonrpc_version_gets_invalid_request(shared: RawServer):
    shared.send(frame({"id": 7, "method": "textDocument/hover", "params": hover_at(shared.uri, {"line": 0, "character": 0})}))
    assert shared.response(7)["error"]["code"] == INVALID_REQUEST


def test_a_notification_with_invalid_params_is_logged_and_the_server_goes_on(shared: RawServer):
    shared.notify("textDocument/didOpen", {"textDocument": {"uri": 5}})
    assert "result" in shared.call("textDocument/hover", hover_at(shared.uri, {"line": 0, "character": 0}))
    assert "ignored a textDocument/didOpen notification with invalid params" in shared.log()


# -- after shutdown ----------------------------------------------------------------------------------


def test_requests_after_shutdown_get_invalid_request_and_exit_still_ends_the_server(server: RawServer):
    assert server.call("shutdown") == {"jsonrpc": "2.0", "id": server.next_id, "result": None}
    for method, params in [("textDocument/hover", hover_at(server.uri, {"line": 0, "character": 0})),
                           ("textDocument/hover", hover_at(server.uri, {"line": -1, "character": 0})),
                           ("shutdown", None),
                           ("graphsafe/unknown", None)]:
        response = server.call(method, params)
        assert response["error"]["code"] == INVALID_REQUEST, response
        assert "shut down" in response["error"]["message"]
    server.notify("textDocument/didOpen", {"textDocument": {"uri": server.uri, "languageId": "python",
                                                            "version": 2, "text": ITEM}})  # ignored
    server.notify("exit")
    assert server.process.wait(TIMEOUT_S) == 0


# -- malformed frames ----------------------------------------------------------------------------
# On the shared server: each test also shows that the ones before it left the stream in step.


def hover_request(server: RawServer) -> dict:
    return {"jsonrpc": "2.0", "id": server._new_id(), "method": "textDocument/hover",
            "params": hover_at(server.uri, {"line": ITEM_LINE, "character": 13})}


def test_a_frame_with_too_short_a_content_length_is_answered_and_the_next_request_too(shared: RawServer):
    first, second = hover_request(shared), hover_request(shared)
    bad = json.dumps(first).encode()
    shared.send(frame(bad, length=len(bad) - 10) + frame(second))
    assert shared.response(first["id"])["error"]["code"] == PARSE_ERROR  # its id, read from the part that came
    assert "GS101" in shared.response(second["id"])["result"]["contents"]["value"]
    assert "malformed message frame: bytes before a header" in shared.log()


@pytest.mark.parametrize("excess", [1, 3, 40])
def test_a_frame_with_too_long_a_content_length_is_read_up_to_the_next_header(shared: RawServer, excess: int):
    first, second = hover_request(shared), hover_request(shared)
    good = json.dumps(first).encode()
    shared.send(frame(good, length=len(good) + excess) + frame(second))
    assert "GS101" in shared.response(first["id"])["result"]["contents"]["value"]  # the body was whole: answered
    assert "GS101" in shared.response(second["id"])["result"]["contents"]["value"]
    assert f"Content-Length {len(good) + excess}, but the next header starts after {len(good)} bytes" in shared.log()


@pytest.mark.parametrize("bad", [
    frame(b"this is not json"),
    frame(b'{"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {'),
    frame(b"\xff\xfe{}"),
    b"Content-Length: many\r\n\r\n{}",
    b"Content-Length: 99999999999999\r\n\r\n",
    b"garbage without any header\r\n\r\n",
    frame(b"[1, 2]"),
])
def test_after_a_malformed_frame_the_next_request_is_answered(shared: RawServer, bad: bytes):
    warnings = shared.log().count("graphsafe-lsp WARNING")
    request = hover_request(shared)
    shared.send(bad + frame(request))
    assert "GS101" in shared.response(request["id"])["result"]["contents"]["value"]
    assert shared.log().count("graphsafe-lsp WARNING") > warnings  # the reason is logged, not swallowed


def test_an_unreadable_request_with_a_readable_id_gets_a_parse_error(shared: RawServer):
    shared.send(frame(b'{"jsonrpc": "2.0", "id": "a-1", "method": "textDocument/hover", "params": {"oops'))
    response = shared.response("a-1")
    assert response["error"]["code"] == PARSE_ERROR
    assert "not JSON" in response["error"]["message"]


def test_a_frame_whose_body_arrives_after_its_header_is_not_cut_short(server: RawServer):
    # Header and body in separate writes: the reader waits for the body rather than resynchronise.
    request = hover_request(server)
    body = json.dumps(request).encode()
    server.send(b"Content-Length: %d\r\n\r\n" % len(body))
    server.send(body[:20])
    server.send(body[20:])
    assert "GS101" in server.response(request["id"])["result"]["contents"]["value"]
    assert "malformed" not in server.log()
