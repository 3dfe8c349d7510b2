"""The editor follows the run-time facts file as `graphsafe trace --save-facts` rewrites it: a
watched-file event, or the next analysis of a buffer (its mtime is looked at whenever diagnostics
are computed), re-reads it and re-publishes the open buffers' diagnostics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types

from graphsafe.analyzer.run_facts import function_hashes
from tests.lsp.client import Session
from tests.lsp.test_facts_file import NOTE, STEP, write_facts

DEFAULT = ".graphsafe/facts.json"  # where `trace --save-facts` writes without a PATH

UPDATE = "import torch\n\n\ndef step(w, grad, lr):  # graphsafe: region\n    w.sub_(grad * lr)\n"


def watched(session: Session, name: str, kind: types.FileChangeType) -> None:
    """What an editor watching `**/.graphsafe/facts.json` sends when the file is written or removed."""
    session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=session.uri(name), type=kind)]))


def noted(session: Session, uri: str) -> bool:
    return any(NOTE in d.message for d in session.diagnostics(uri))


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_fact_appears_in_an_open_buffer_when_the_facts_file_is_written(session: Session):
    await session.initialize()
    uri = session.open("train.py", STEP)
    assert await session.wait_for_version(uri) == []  # no facts yet: `sched` is Unknown
    await session.wait_for_index()  # built before the facts file exists
    write_facts(session.root, DEFAULT)
    watched(session, DEFAULT, types.FileChangeType.Created)
    await session.wait_until(lambda: noted(session, uri), "the GS201 the new facts decide")
    assert [d.code for d in session.diagnostics(uri)] == ["GS201"]
    (session.root / DEFAULT).unlink()
    watched(session, DEFAULT, types.FileChangeType.Deleted)
    await session.wait_until(lambda: session.diagnostics(uri) == [], "the GS201 gone with the facts file")


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_facts_file_written_without_a_watch_event_is_read_at_the_next_analysis(session: Session):
    await session.initialize()
    uri = session.open("train.py", STEP)
    other = session.open("notes.py", "X = 1\n")
    assert await session.wait_for_version(uri) == [] and await session.wait_for_version(other) == []
    await session.wait_for_index()  # built before the facts file exists
    write_facts(session.root, DEFAULT)  # no event: an editor that does not watch files
    session.change(other, "X = 2\n")  # another buffer's edit: diagnostics are computed again
    await session.wait_until(lambda: noted(session, uri), "train.py re-published with the new facts")
    assert session.versions[uri] == 1  # train.py itself was not edited


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_editor_shows_a_number_that_changed_between_steps_as_the_run_saw_it(session: Session):
    digest = next(iter(function_hashes(UPDATE)["step"]))
    path = session.root / DEFAULT
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "root": "..", "files": {"update.py": {"functions": {"step": {
        "source_hash": digest, "values": {"lr": {"kind": "number", "changed": True, "values": ["0.0003", "3e-05"]}}}}}}}))
    await session.initialize()
    uri = session.open("update.py", UPDATE)
    [d] = await session.wait_for_version(uri)
    assert d.code == "GS301" and "(observed at run time: lr changed 0.0003 → 3e-05)" in d.message
    assert d.range.start.line == 4  # `w.sub_(grad * lr)`, where the number enters device work
