"""`graphsafe lsp` end to end, one server for the whole module: buffers, actions, hover, robustness."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio
from lsprotocol import types

from tests.lsp.client import TIMEOUT_S, Session

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def session(shared: Session) -> Session:
    return shared  # one server for the module; every test uses its own file names

ITEM = "import torch\n\n\ndef step(x: torch.Tensor):  # graphsafe: region\n    return x.item()\n"
CLEAN = "import torch\n\n\ndef step(x: torch.Tensor):  # graphsafe: region\n    return x * 2\n"
FIXABLE = (
    "import torch\n"
    "\n"
    "opt = torch.optim.Adam(params)\n"
    "x = torch.ones(2)\n"
    "static = torch.zeros(2)\n"
    "g = torch.cuda.CUDAGraph()\n"
    'with torch.autocast("cuda", dtype=torch.bfloat16):\n'
    "    with torch.cuda.graph(g):\n"
    "        out = static * 2\n"
    "static = x\n"
    "\n"
    "\n"
    "def train_step():  # graphsafe: region\n"
    "    opt.step()\n"
)


def whole(lines: int = 100) -> types.Range:
    return types.Range(start=types.Position(line=0, character=0), end=types.Position(line=lines, character=0))


async def actions(session: Session, uri: str, range_: types.Range, only=None) -> list[types.CodeAction]:
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=range_,
        context=types.CodeActionContext(diagnostics=session.diagnostics(uri), only=only),
    )
    return await asyncio.wait_for(session.client.text_document_code_action_async(params), TIMEOUT_S) or []


async def test_diagnostics_of_an_unsaved_buffer(session: Session):
    uri = session.open("unsaved.py", ITEM)  # never written to disk
    [d] = await session.wait_for_version(uri)
    assert d.code == "GS101"
    assert d.source == "graphsafe"
    assert d.severity == types.DiagnosticSeverity.Error
    assert d.code_description.href.endswith("#gs101-item-sync")
    assert (d.range.start.line, d.range.start.character, d.range.end.character) == (4, 11, 19)
    [related] = d.related_information
    assert related.message == "in capture region step: step"
    assert related.location.uri == uri and related.location.range.start.line == 3


async def test_untitled_buffer(session: Session):
    uri = "untitled:Untitled-1"
    session.versions[uri] = 1
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=ITEM)
    ))
    await session.wait_until(lambda: session.codes(uri) == ["GS101"], "GS101 in an untitled buffer")


async def test_noqa_action_silences_the_line(session: Session):
    uri = session.open("noqa.py", ITEM)
    [d] = await session.wait_for_version(uri)
    found = await actions(session, uri, d.range)
    [noqa] = [a for a in found if a.title == "Disable GS101 for this line"]
    assert noqa.kind == types.CodeActionKind.QuickFix
    session.apply(uri, noqa.edit)
    assert "return x.item()  # noqa: GS101\n" in session.texts[uri]
    assert await session.wait_for_version(uri) == []


async def test_quick_fixes_safe_and_unsafe_and_fix_all(session: Session):
    uri = session.open("fixes.py", FIXABLE)
    await session.wait_for_version(uri)
    assert session.codes(uri) == ["GS401", "GS701", "GS702"]
    found = await actions(session, uri, whole())
    titles = {a.title: a for a in found}
    safe = titles["Pass `cache_enabled=False`"]
    assert safe.is_preferred and safe.kind == types.CodeActionKind.QuickFix
    [copy] = [a for t, a in titles.items() if t.startswith("(unsafe) Copy into `static` with `.copy_()` instead of rebinding it — ")]
    assert not copy.is_preferred and [e.new_text for e in copy.edit.changes[uri]] == ["static.copy_(x)"]
    assert any(t.startswith("(unsafe) Build `Adam` with `capturable=True`") for t in titles)
    assert "Disable GS401 for this line" in titles and "Disable GS701 for this line" in titles

    [fix_all] = await actions(session, uri, whole(), only=[types.CodeActionKind.SourceFixAll])
    assert fix_all.kind == "source.fixAll.graphsafe"
    session.apply(uri, fix_all.edit)
    assert "cache_enabled=False" in session.texts[uri]
    assert "\nstatic = x\n" in session.texts[uri] and "Adam(params)" in session.texts[uri]  # unsafe: not in fixAll
    await session.wait_for_version(uri)
    assert session.codes(uri) == ["GS401", "GS701"]
    assert await actions(session, uri, whole(), only=["source.fixAll.graphsafe"]) == []


async def test_hover_shows_rule_docs(session: Session):
    text = ITEM.replace("x.item()", "x.item()  # noqa: GS201, GS101")
    uri = session.open("hover_noqa.py", text)
    await session.wait_for_version(uri)
    line = text.splitlines()[4]

    async def hover(character: int, line_number: int = 4):
        params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                   position=types.Position(line=line_number, character=character))
        return await asyncio.wait_for(session.client.text_document_hover_async(params), TIMEOUT_S)

    on_code = await hover(line.index("GS101") + 2)
    assert on_code.contents.kind == types.MarkupKind.Markdown
    assert on_code.contents.value.startswith("# GS101 item-sync")
    assert on_code.range.start.character == line.index("GS101")
    assert (await hover(line.index("GS201"))).contents.value.startswith("# GS201")
    assert await hover(0, 1) is None

    uri2 = session.open("hover_diagnostic.py", ITEM)
    await session.wait_for_version(uri2)
    params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri2), position=types.Position(line=4, character=14))
    over_diagnostic = await asyncio.wait_for(session.client.text_document_hover_async(params), TIMEOUT_S)
    assert over_diagnostic.contents.value.startswith("# GS101 item-sync")


async def test_syntax_error_mid_edit_is_gs000(session: Session):
    uri = session.open("syntax.py", ITEM)
    await session.wait_for_version(uri)
    for partial in ("import torch\n\ndef step(x:", "import torch\n\ndef step(x: torch.Tensor):  # graphsafe: region\n    return x.item(\n"):
        session.change(uri, partial)
        [d] = await session.wait_for_version(uri)
        assert d.code == "GS000" and d.message.startswith("syntax error")
        assert d.range.start.line in (2, 3, 4)
    session.change(uri, ITEM)
    assert [d.code for d in await session.wait_for_version(uri)] == ["GS101"]


async def test_rapid_edits_publish_only_the_latest(session: Session):
    uri = session.open("rapid.py", CLEAN)
    await session.wait_for_version(uri)
    for i in range(30):
        session.change(uri, (ITEM if i % 2 else CLEAN).replace("step", f"step{i}"))
    final = session.versions[uri]
    await session.wait_for_version(uri)
    versions = [p.version for p in session.published if p.uri == uri]
    assert versions == sorted(versions)  # never an older result after a newer one
    assert len(versions) < 30  # debounced
    assert session.codes(uri) == ["GS101"] and versions[-1] == final


async def test_unknown_documents_and_malformed_messages_are_harmless(session: Session):
    ghost = session.uri("ghost.py")
    client = session.client
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=ghost)))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=ghost, version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text="x = 1\n")],
    ))
    hover = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=ghost), position=types.Position(line=0, character=0))
    assert await asyncio.wait_for(client.text_document_hover_async(hover), TIMEOUT_S) is None
    assert await actions(session, ghost, whole()) == []
    # Bytes that are not JSON, JSON that is not JSON-RPC, a request with invalid params.
    stdin = client._server.stdin
    for body in (b"{not json", b'{"bad": 1}', b'{"jsonrpc": "2.0", "id": 9999, "method": "textDocument/hover", "params": {"bogus": 1}}'):
        stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    uri = session.open("after_garbage.py", ITEM)
    assert [d.code for d in await session.wait_for_version(uri)] == ["GS101"]
    assert not [m for m in client.messages if m.type == types.MessageType.Error]


async def test_large_file(session: Session):
    body = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y * 2\n\n\n" for i in range(1500))
    uri = session.open("big.py", "import torch\n\n\n" + body + ITEM.split("\n", 3)[3])
    assert [d.code for d in await session.wait_for_version(uri)] == ["GS101"]


async def test_keyword_fixes_from_the_rng_and_config_rules(session: Session):
    text = (
        "import torch\n"
        "from torch.utils.checkpoint import checkpoint\n"
        "\n"
        "g = torch.cuda.CUDAGraph()\n"
        'with torch.autocast("cuda", dtype=torch.bfloat16):\n'
        "    with torch.cuda.graph(g):\n"
        "        y = model(x)\n"
        "\n"
        "\n"
        "def step(x: torch.Tensor):  # graphsafe: region\n"
        "    return checkpoint(f, x, use_reentrant=False)\n"
    )
    uri = session.open("keywords.py", text)
    await session.wait_for_version(uri)
    assert {"GS603", "GS702"} <= set(session.codes(uri))
    found = await actions(session, uri, whole())
    assert [a.kind for a in found].count("source.fixAll.graphsafe") == 1  # offered with the quick fixes
    fixes = [a for a in found if a.kind == "quickfix" and not a.title.startswith("Disable ")]
    rng = [a for a in fixes if "preserve_rng_state=False" in a.edit.changes[uri][0].new_text]
    autocast = [a for a in fixes if "cache_enabled=False" in a.edit.changes[uri][0].new_text]
    assert len(rng) == 1 and rng[0].title.startswith("(unsafe) ") and not rng[0].is_preferred
    assert len(autocast) == 1 and autocast[0].is_preferred and not autocast[0].title.startswith("(unsafe)")
    [fix_all] = await actions(session, uri, whole(), only=["source.fixAll.graphsafe"])
    session.apply(uri, fix_all.edit)
    assert "cache_enabled=False" in session.texts[uri] and "preserve_rng_state" not in session.texts[uri]
    await session.wait_for_version(uri)
    assert "GS702" not in session.codes(uri) and "GS603" in session.codes(uri)


async def test_quick_fixes_on_a_cr_buffer_give_the_text_fix_writes(session: Session):
    from graphsafe.config import Settings
    from graphsafe.fixer import fix_buffer
    from tests.test_line_endings import PROGRAM, with_endings

    text = with_endings(PROGRAM, "\r")  # old Mac endings: every line ends at a lone \r
    _, expected = fix_buffer(text.encode(), "cr_fixes.py", Settings(), False)
    assert b"output_size=3" in expected and b"\n" not in expected
    uri = session.open("cr_fixes.py", text)
    found = await session.wait_for_version(uri)
    assert [(str(d.code), d.range.start.line, d.range.start.character) for d in found] == [
        ("GS107", 16, 12), ("GS402", 16, 39), ("GS402", 17, 16), ("GS501", 18, 8), ("GS101", 18, 21),  # 𝛼: 2 UTF-16 units
    ]
    for _ in range(5):  # one safe quick fix at a time, as a user picks them
        safe = [a for a in await actions(session, uri, whole()) if a.is_preferred]
        if not safe:
            break
        session.apply(uri, safe[0].edit)
        await session.wait_for_version(uri)
    assert session.texts[uri] == expected.decode()

    other = session.open("cr_fix_all.py", text)
    await session.wait_for_version(other)
    [fix_all] = await actions(session, other, whole(), only=["source.fixAll.graphsafe"])
    session.apply(other, fix_all.edit)
    assert session.texts[other] == expected.decode()
    assert not [m for m in session.client.log_messages if "not offered" in m.message]


async def test_an_incremental_change_after_a_form_feed_lands_on_its_line(session: Session):
    text = CLEAN.replace("import torch\n", "import torch  # page\x0cbreak\u2028\n")
    uri = session.open("form_feed.py", text)
    assert await session.wait_for_version(uri) == []
    line = text.split("\n").index("    return x * 2")  # 4: LSP counts no break at \x0c or U+2028
    session.versions[uri] += 1
    session.texts[uri] = text.replace("x * 2", "x.item()")
    session.client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=session.versions[uri]),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=11), end=types.Position(line=line, character=16)),
            text="x.item()",
        )],
    ))
    [d] = await session.wait_for_version(uri)
    assert (d.code, d.range.start.line, d.range.start.character) == ("GS101", line, 11)
