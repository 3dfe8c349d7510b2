"""Big and deeply nested buffers are analysed in a child process of their own (lsp/isolation.py):
the same diagnostics as in the server's process, a memory cap, a worker that never waits on one,
and no child left behind."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import pytest

from graphsafe.analyzer import limits
from graphsafe.lsp.workspace import WorkspaceState

CORPUS_FILE = Path(__file__).parent.parent.parent / "corpus/dreamer_update/agent.py"
HOG_LINE = "x = " + "f(lambda: " * 199 + "1" + ")" * 199 + "\n"  # libcst: ~200 MB a line, uncapped


def _analyse(state: WorkspaceState, root: Path, name: str, text: str, version: int = 1):
    path = str(root / name)
    [publication, *_] = state.analyse(Path(path).as_uri(), path, version, text)
    return publication.diagnostics


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_buffer_analysed_in_its_child_gets_the_in_process_diagnostics(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.graphsafe]\nregions = ["*"]\n')
    text = CORPUS_FILE.read_text()
    edited = text.replace("\n\n\n", "\n\n\n# a comment\n", 1)
    here = [_analyse(WorkspaceState([tmp_path]), tmp_path, "agent.py", t) for t in (text, edited)]
    monkeypatch.setattr(limits, "ISOLATE_MIN_CHARS", 0)  # every buffer in a child
    state = WorkspaceState([tmp_path])
    isolated = [_analyse(state, tmp_path, "agent.py", text)]
    [pid] = state.isolated.pids()
    isolated.append(_analyse(state, tmp_path, "agent.py", edited, 2))  # the child's parser reuses the rest
    assert len(here[0]) > 10 and isolated == here
    assert state.isolated.pids() == [pid]  # the same child served the edit
    state.closed((tmp_path / "agent.py").as_uri(), str(tmp_path / "agent.py"))
    assert state.isolated.pids() == [] and not _alive(pid)


def test_a_pathological_buffer_stops_at_the_memory_cap_with_the_workers_gs000(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MEMORY_LIMIT_BYTES", 64 << 20)  # sent to the child with the request
    [notice] = _analyse(WorkspaceState([tmp_path]), tmp_path, "hog.py", HOG_LINE * 20)
    assert notice.code == "GS000" and notice.message == "memory limit exceeded (64 MiB); file skipped"


def test_a_normal_buffer_is_analysed_in_the_servers_process(tmp_path):
    state = WorkspaceState([tmp_path])
    _analyse(state, tmp_path, "small.py", "import torch\n\n\ndef step(x):  # graphsafe: region\n    return x.item()\n")
    assert state.isolated.pids() == [] and state.parsers  # no child; its parser kept here


def test_a_wait_cancelled_by_another_buffer_leaves_the_child_working_and_finds_its_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "ISOLATE_MIN_CHARS", 0)
    state = WorkspaceState([tmp_path])
    text = CORPUS_FILE.read_text()
    _analyse(state, tmp_path, "agent.py", "x = 1\n")  # the child is started
    [pid] = state.isolated.pids()
    cancel = threading.Event()
    threading.Timer(0.05, cancel.set).start()
    with limits.cancellable(cancel):
        with pytest.raises(limits.Paused):
            _analyse(state, tmp_path, "agent.py", text)
    started = time.monotonic()
    assert _analyse(state, tmp_path, "agent.py", text)  # asked again: the same request, answered
    assert state.isolated.pids() == [pid] and time.monotonic() - started < 5
    state.isolated.end_all()
    assert not _alive(pid)


# -- the server ---------------------------------------------------------------------------------


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _big_buffer() -> str:
    from tests.lsp.test_server import _many_functions

    return _many_functions(2000)  # ~330 KB: ~4 s of libcst parse and ~5 s of walk on this machine


def _wait_gone(pids: set[int], timeout: float = 10.0) -> set[int]:
    deadline = time.monotonic() + timeout
    while (alive := {p for p in pids if _alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


@pytest.fixture
def raw_server(tmp_path):
    from tests.lsp.test_protocol_errors import RawServer

    server = RawServer(tmp_path)
    try:
        server.initialize()
        yield server
    finally:
        server.close()


def _published(server, uri: str) -> list[dict]:
    return [m["params"] for m in server.notifications
            if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri]


SMALL = "import torch\n\n\ndef step(x: torch.Tensor):  # graphsafe: region\n    return x.item()\n" + "# -\n" * 15


@pytest.mark.slow
def test_a_small_buffers_diagnostics_come_within_a_second_while_a_big_one_is_parsed(raw_server):
    server = raw_server
    small = server.open("small.py", SMALL)  # 20 lines
    big = (server.root / "big.py").as_uri()
    server.notify("textDocument/didOpen", {"textDocument": {"uri": big, "languageId": "python", "version": 1,
                                                            "text": _big_buffer()}})
    time.sleep(0.5)  # the big buffer's analysis has started (debounce 0.15 s)
    asked = time.monotonic()
    edited = SMALL.replace("x.item()", "x.item() + x.tolist()[0]")
    server.notify("textDocument/didChange", {"textDocument": {"uri": small, "version": 2},
                                             "contentChanges": [{"text": edited}]})
    published = server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                and m["params"]["uri"] == small and m["params"].get("version") == 2,
                                "the edited small buffer's diagnostics")
    waited = time.monotonic() - asked
    assert [d["code"] for d in published["params"]["diagnostics"]] == ["GS101", "GS102"]  # .item() and .tolist()
    assert waited < 1.0, f"the small buffer waited {waited:.2f} s"
    assert _published(server, big) == []  # still being parsed in its child
    server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == big,
                    "the big buffer's diagnostics", timeout=120)
    assert len(_published(server, big)[0]["diagnostics"]) == 200  # step calls every tenth function


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["shutdown and exit", "the client gone", "the server killed"])
def test_no_child_outlives_the_server(raw_server, ending):
    server = raw_server
    big = (server.root / "big.py").as_uri()
    server.notify("textDocument/didOpen", {"textDocument": {"uri": big, "languageId": "python", "version": 1,
                                                            "text": "x = 1\n" * 12_000}})  # 72 KB: isolated
    server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == big,
                    "the big buffer's diagnostics")
    children = _descendants(server.process.pid)  # the fork server, the buffer's child, a resource tracker
    assert len(children) >= 2, children
    if ending == "shutdown and exit":
        assert "result" in server.call("shutdown")
        server.notify("exit")
    elif ending == "the client gone":
        server.process.stdin.close()  # what a client's death looks like from here
    else:
        server.process.kill()
    server.process.wait(30)
    assert _wait_gone(children) == set()


def test_at_most_max_children_live_the_least_recently_analysed_ending_first(tmp_path, monkeypatch):
    from graphsafe.lsp.isolation import MAX_CHILDREN

    monkeypatch.setattr(limits, "ISOLATE_MIN_CHARS", 0)
    state = WorkspaceState([tmp_path])
    _analyse(state, tmp_path, "b0.py", "x = 1\n")
    [oldest] = state.isolated.pids()
    for i in range(1, MAX_CHILDREN + 1):
        _analyse(state, tmp_path, f"b{i}.py", "x = 1\n")
    alive = state.isolated.pids()
    state.isolated.end_all()
    assert len(alive) == MAX_CHILDREN and oldest not in alive and not _alive(oldest)
