"""`graphsafe lsp` end to end with a fresh server per test: configuration, the index, shutdown and exit."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from lsprotocol import types

from tests.lsp.client import TIMEOUT_S, Session

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]  # a fresh server process per test

ITEM = "import torch\n\n\ndef step(x: torch.Tensor):  # graphsafe: region\n    return x.item()\n"


async def test_config_reload(session: Session):
    await session.initialize()
    uri = session.open("train.py", ITEM)
    assert [d.code for d in await session.wait_for_version(uri)] == ["GS101"]
    pyproject = session.write("pyproject.toml", '[tool.graphsafe]\nignore = ["GS101"]\n')
    session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=pyproject, type=types.FileChangeType.Created)]
    ))
    await session.wait_until(lambda: session.codes(uri) == [], "GS101 to disappear after ignore")

    # A broken config is a message, never a crash; the last good settings stay in force.
    session.write("pyproject.toml", "[tool.graphsafe\nignore = [")
    session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=pyproject, type=types.FileChangeType.Changed)]
    ))
    await session.wait_until(
        lambda: any(m.type == types.MessageType.Error and "invalid TOML" in m.message for m in session.client.messages),
        "a configuration error message",
    )
    session.write("pyproject.toml", '[tool.graphsafe]\nunknown-key = 1\n')
    session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=pyproject, type=types.FileChangeType.Changed)]
    ))
    await session.wait_until(lambda: any("unknown-key" in m.message for m in session.client.messages), "unknown key message")

    # Saving pyproject.toml in the editor reloads it too.
    session.write("pyproject.toml", "[tool.graphsafe]\nignore = []\n")
    session.client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=pyproject)))
    await session.wait_until(lambda: session.codes(uri) == ["GS101"], "GS101 back after the save")
    assert session.client.diagnostics  # the server is alive and publishing


async def test_cross_file_chain_through_the_index(session: Session):
    session.write("a.py", "from b import helper\n\n\ndef step(x):  # graphsafe: region\n    return helper(x)\n")
    b_text = "import torch\n\n\ndef helper(x: torch.Tensor):\n    return x.item()\n"
    session.write("b.py", b_text)
    await session.initialize()
    await session.wait_for_index()
    b = session.open("b.py", b_text)
    [d] = await session.wait_for_version(b)
    assert d.code == "GS101"
    assert d.related_information[0].message == "in capture region step: step → helper"
    assert d.related_information[0].location.uri == session.uri("a.py")

    # Editing a.py's buffer (unsaved) changes what b.py reports.
    a = session.open("a.py", "from b import helper\n\n\ndef step(x):  # graphsafe: region\n    return x\n")
    await session.wait_until(lambda: session.codes(b) == [], "b.py to be clean once a.py no longer calls it")
    # Closing a.py without saving: the index falls back to the file on disk.
    session.client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=a)))
    await session.wait_until(lambda: session.codes(b) == ["GS101"], "b.py's GS101 back after closing a.py")
    # A change on disk (git checkout, another tool) reaches the index through watched files.
    session.write("a.py", "def step(x):  # graphsafe: region\n    return x\n")
    session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=a, type=types.FileChangeType.Changed)]
    ))
    await session.wait_until(lambda: session.codes(b) == [], "b.py clean after a.py changed on disk")


async def test_shutdown_then_exit(session: Session):
    await session.initialize()
    await session.client.shutdown_session()
    assert session.client._server.returncode == 0


async def test_exit_without_shutdown(session: Session):
    await session.initialize()
    session.client.exit(None)
    await asyncio.wait_for(session.client._server.wait(), TIMEOUT_S)
    assert session.client._server.returncode == 1


async def test_messages_before_initialize_are_harmless(session: Session):
    stdin = session.client._server.stdin
    early = [
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": session.uri("early.py"), "languageId": "python", "version": 1, "text": ITEM}}},
        {"jsonrpc": "2.0", "id": 7777, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": session.uri("early.py")}, "position": {"line": 0, "character": 0}}},
    ]
    for message in early:
        body = json.dumps(message).encode()
        stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    await session.initialize()
    uri = session.open("train.py", ITEM)
    assert [d.code for d in await session.wait_for_version(uri)] == ["GS101"]


async def test_buffers_get_their_module_name_among_clashing_script_folders(session: Session):
    # Two example folders, each with its own `model.py` imported as `import model`.
    session.write("ex1/train.py", "import model\n\n\ndef step(x):  # graphsafe: region\n    return model.helper(x)\n")
    model = "import torch\n\n\ndef helper(x: torch.Tensor):\n    return x.item()\n"
    session.write("ex1/model.py", model)
    session.write("ex2/train.py", "import model\n\n\ndef run(x):\n    return model.helper(x)\n")
    session.write("ex2/model.py", model)
    await session.initialize()
    await session.wait_for_index()
    ex1 = session.open("ex1/model.py", model)
    ex2 = session.open("ex2/model.py", model)
    [d] = await session.wait_for_version(ex1)
    assert d.related_information[0].message == "in capture region step: step → helper"
    assert await session.wait_for_version(ex2) == []  # ex2's helper is reached by no region


EDITED = (
    "import torch\n"
    "\n"
    "opt = torch.optim.Adam(params)\n"
    "\n"
    "\n"
    "class Model(torch.nn.Module):\n"
    "    def forward(self, x: torch.Tensor):\n"
    "        # a comment\n"
    "        y = x * 2\n"
    "        if y.sum() > 0:\n"
    "            return y.item()\n"
    "        return y.cpu()\n"
    "\n"
    "\n"
    "def step(model: Model, x: torch.Tensor):  # graphsafe: region\n"
    "    out = model(x)\n"
    "    opt.step()\n"
    "    return float(out)\n"
)


async def test_random_edits_publish_what_a_fresh_analysis_finds(session: Session):
    """Ranged didChange edits (the incremental path: reused syntax tree and project step),
    some of them syntax errors: after each, the diagnostics equal a from-scratch analysis."""
    import random

    from graphsafe.analyzer.engine import check_source
    from graphsafe.lsp import convert, index
    from graphsafe.lsp.settings import resolve

    await session.initialize()
    await session.wait_for_index()
    path = session.root / "edited.py"
    settings, naming = resolve(session.root).settings, index.naming_among(str(path), [])
    uri = session.open("edited.py", EDITED)
    rng = random.Random(3)
    text, broken, valid, with_chain = EDITED, 0, 0, 0
    for step in range(60):
        line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
        at = rng.choice(line_starts)
        indent = len(text[at:]) - len(text[at:].lstrip(" "))
        kind = rng.random()
        if broken >= 3:  # back to the original, as one ranged edit
            start, end, new = 0, len(text), EDITED
        elif kind < 0.25:  # a trailing space
            start = end = text.find("\n", at) if "\n" in text[at:] else len(text)
            new = " "
        elif kind < 0.5:  # a character typed into a word
            words = [i + 1 for i in range(len(text) - 1) if text[i].isalpha() and text[i + 1].isalnum()]
            start = end = rng.choice(words)
            new = "x"
        elif kind < 0.7:  # a new statement at a line's indentation (a body grows, or a region call)
            start = end = at
            new = " " * indent + rng.choice(["z = y.item()\n", "pass\n", "# note\n", "\n", "torch.cuda.synchronize()\n"])
        elif kind < 0.85:  # a line deleted
            start, end = at, (text.find("\n", at) + 1) or len(text)
            new = ""
        else:  # a random character anywhere (often a syntax error, fixed by a later step)
            start = rng.randint(0, len(text))
            end = min(len(text), start + rng.choice([0, 1]))
            new = rng.choice([" ", "(", ":", "#", "\n", "    "])

        def position(offset: int) -> types.Position:
            line = text.count("\n", 0, offset)
            return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))

        change = types.TextDocumentContentChangePartial(range=types.Range(start=position(start), end=position(end)), text=new)
        text = text[:start] + new + text[end:]
        session.versions[uri] += 1
        session.texts[uri] = text
        session.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=session.versions[uri]),
            content_changes=[change],
        ))
        published = await session.wait_for_version(uri)
        fresh = check_source(text, str(path), settings, [], naming).diagnostics
        lines = convert.split_lines(text)
        expected = [convert.to_diagnostic(d, lines, convert.UTF16, lambda p: session.uri(Path(p).name)) for d in fresh]

        def key(d: types.Diagnostic):
            related = [(r.message, r.location.uri, r.location.range.start.line) for r in d.related_information or ()]
            return (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character,
                    d.message, related)

        assert sorted(map(key, published)) == sorted(map(key, expected)), f"step {step}:\n{text}"
        broken = broken + 1 if any(d.code == "GS000" for d in fresh) else 0
        valid += not broken
        with_chain += sum(d.region is not None for d in fresh)
    assert valid > 30 and with_chain > 30  # mostly analysable code, with regions and chains


LAUNCH = """#!/bin/bash
torchrun pretrain_gpt.py --transformer-impl local --enable-cuda-graph --bf16
"""


async def test_launch_scripts_get_the_megatron_diagnostics(session: Session):
    await session.initialize()
    uri = session.open("launch.sh", LAUNCH, language_id="shellscript")
    [d] = await session.wait_for_version(uri)
    assert d.code == "GS801" and d.range.start.line == 1  # at the flag that enables CUDA graphs
    session.change(uri, LAUNCH.replace("--bf16", "--bf16 --te-rng-tracker"))
    assert await session.wait_for_version(uri) == []
    other = session.open("notes.txt", "--enable-cuda-graph\n", language_id="plaintext")
    await asyncio.sleep(0.3)
    assert session.diagnostics(other) == []  # only Python files and launch scripts are analysed



async def test_a_buffer_over_the_live_limit_gets_one_notice_instead_of_an_analysis(session: Session):
    await session.initialize({"maxLiveBytes": 300})
    padding = "# é\n" * 80  # 400 bytes in 320 characters: the limit counts bytes
    uri = session.open("big.py", ITEM + padding)
    [notice] = await session.wait_for_version(uri)
    size = len((ITEM + padding).encode())
    assert notice.code == "GS000" and notice.range.start == types.Position(line=0, character=0)
    assert notice.message.startswith(f"buffer too large for live analysis: {size} bytes > 300; run `graphsafe check big.py`")
    params = types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=uri), range=notice.range,
                                    context=types.CodeActionContext(diagnostics=[notice]))
    assert await asyncio.wait_for(session.client.text_document_code_action_async(params), TIMEOUT_S) is None
    session.change(uri, ITEM)  # back under the limit: analysed as usual
    assert [d.code for d in await session.wait_for_version(uri)] == ["GS101"]
    session.change(uri, ITEM + padding)
    assert [d.message.split(":")[0] for d in await session.wait_for_version(uri)] == ["buffer too large for live analysis"]


def _many_functions(count: int) -> str:
    """A big buffer: `count` small functions, every tenth of them called from a capture region."""
    functions = "".join(
        f"def f{i}(x: torch.Tensor, y: torch.Tensor):\n    z = x * {i} + y\n    w = z.sum(dim=0)\n"
        f"    if w.mean() > 0:\n        z = z - w\n    return torch.relu(z) + x.abs()\n\n\n"
        for i in range(count)
    )
    calls = "".join(f"    x = f{i}(x, x)\n" for i in range(0, count, 10))
    return f"import torch\n\n\n{functions}def step(x: torch.Tensor):  # graphsafe: region\n{calls}    return x\n"


async def test_a_big_buffers_running_analysis_gives_way_to_a_small_buffers(session: Session):
    """The big buffer's re-analysis (its walk: ~3 s alone on a 2-core machine; its first, full
    parse is native code that cannot be interrupted, so the test waits that one out) is cancelled
    when the small buffer comes, and runs again after it."""
    await session.initialize({"index": False})
    # ~200 KB; no newline at its end, so that no idle head start (WorkspaceState.prepare, which
    # needs one) holds the worker after the first analysis: the test measures the analysis alone
    big = session.open("big.py", _many_functions(1200).rstrip("\n"))
    await session.wait_for_version(big)
    published = lambda uri: sum(p.uri == uri for p in session.published)  # noqa: E731
    before = published(big)
    # Saving re-analyses at once (no debounce), reusing the parsed module: the walk is what runs.
    session.client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=big)))
    await asyncio.sleep(0.3)
    asked = time.monotonic()
    small = session.open("small.py", ITEM)
    await session.wait_until(lambda: session.codes(small) == ["GS101"], "the small buffer's GS101")
    waited = time.monotonic() - asked
    assert published(big) == before  # nothing partial was published for the big buffer meanwhile
    await session.wait_until(lambda: published(big) > before, "the big buffer's analysis, run again")
    assert waited < 1.5, f"the small buffer waited {waited:.1f} s"


async def test_buffers_are_analysed_with_the_run_time_facts_of_their_folder(session: Session):
    from graphsafe.analyzer.run_facts import function_hashes

    text = "import torch\n\n\ndef step(x, sched):  # graphsafe: region\n    if sched[0] > 0:\n        return x * 2\n    return x\n"
    digest = next(iter(function_hashes(text)["step"]))
    facts = {"version": 1, "root": "..", "files": {"train.py": {"functions": {"step": {
        "source_hash": digest, "values": {"sched": {"kind": "tensor", "changed": False}}}}}}}
    session.write(".graphsafe/facts.json", json.dumps(facts))
    await session.initialize()
    uri = session.open("train.py", text)
    [d] = await session.wait_for_version(uri)
    assert d.code == "GS201" and "observed at run time: `sched` is a tensor" in d.message
