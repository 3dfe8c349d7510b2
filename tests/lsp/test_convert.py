"""The LSP layer's pure functions: positions, diagnostics, edits, actions, hover, settings, stdout."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from lsprotocol import types

from graphsafe.config import Settings
from graphsafe.fixes import apply_fixes
from graphsafe.lsp import actions, convert, hover
from graphsafe.lsp.settings import resolve
from graphsafe.lsp.workspace import Project, included
from graphsafe.model import Applicability, Confidence, Diagnostic, Edit, Fix, Position, Region, RegionKind

REGION = Region("m.step", "step", RegionKind.COMMENT, Confidence.CERTAIN, "/w/m.py", 3)


def diagnostic(code="GS101", line=2, start=4, end=12, fix=None, region=REGION, chain=("step", "helper")):
    return Diagnostic(code, "message", "/w/m.py", Position(line, start), Position(line, end), region, chain, fix)


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def test_columns_in_each_encoding():
    lines = convert.split_lines("a = '😀é' + b\n")
    column = Position(1, 9)  # the `+`: the emoji and é are one code point each
    assert convert.to_client(lines, column, convert.UTF32).character == 9
    assert convert.to_client(lines, column, convert.UTF16).character == 10  # the emoji is a surrogate pair
    assert convert.to_client(lines, column, convert.UTF8).character == 13  # 4 + 2 bytes
    for encoding in (convert.UTF8, convert.UTF16, convert.UTF32):
        assert convert.from_client(lines, convert.to_client(lines, column, encoding), encoding) == column


def test_positions_are_clamped_and_lines_break_only_on_lsp_breaks():
    lines = convert.split_lines("x = 1\r\ny = '\x0c'\rz\n")
    assert lines == ["x = 1", "y = '\x0c'", "z", ""]
    assert convert.to_client(lines, Position(99, 0), convert.UTF16) == pos(3, 0)
    assert convert.to_client(lines, Position(1, 99), convert.UTF16) == pos(0, 5)
    assert convert.from_client(lines, pos(99, 99), convert.UTF16) == Position(4, 0)
    assert convert.encoding_name(None) == "utf-16"
    assert convert.encoding_name(types.PositionEncodingKind.Utf8) == "utf-8"


def test_diagnostic_carries_code_severity_url_and_region_chain():
    lines = convert.split_lines("def step(x):\n    x.item()\n")
    lsp = convert.to_diagnostic(diagnostic(), lines, convert.UTF16, lambda path: "file:///w/m.py")
    assert (lsp.code, lsp.source, lsp.severity) == ("GS101", "graphsafe", types.DiagnosticSeverity.Error)
    assert lsp.code_description.href.endswith("#gs101-item-sync")
    assert lsp.range == types.Range(start=pos(1, 4), end=pos(1, 12))
    [related] = lsp.related_information
    assert related.message == "in capture region step: step → helper"
    assert related.location.uri == "file:///w/m.py" and related.location.range.start == pos(2, 0)


def test_point_diagnostic_is_widened_and_regionless_has_no_related_info():
    lines = convert.split_lines("def f(:\n")
    lsp = convert.to_diagnostic(diagnostic("GS000", 1, 6, 6, region=None, chain=()), lines, convert.UTF16, lambda p: None)
    assert lsp.range == types.Range(start=pos(0, 6), end=pos(0, 7))
    assert lsp.related_information is None


def test_minimal_edit_spans_only_changed_lines():
    old = "a\nb\nc\nd"
    edit = convert.minimal_edit(old, "a\nB\nc\nd", convert.UTF16)
    assert edit.range == types.Range(start=pos(1, 0), end=pos(2, 0)) and edit.new_text == "B\n"
    tail = convert.minimal_edit(old, "a\nb\nc\nD", convert.UTF16)
    assert tail.range == types.Range(start=pos(3, 0), end=pos(3, 1)) and tail.new_text == "D"
    assert convert.minimal_edit(old, old, convert.UTF16) is None
    appended = convert.minimal_edit("a\n", "a\nb\n", convert.UTF16)
    assert appended.range == types.Range(start=pos(1, 0), end=pos(1, 0)) and appended.new_text == "b\n"


def _apply(text: str, edit: types.WorkspaceEdit, uri: str) -> str:
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for e in sorted(edit.changes[uri], key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        a = starts[e.range.start.line] + e.range.start.character
        b = starts[e.range.end.line] + e.range.end.character
        text = text[:a] + e.new_text + text[b:]
    return text


def test_quickfix_noqa_and_fix_all_from_constructed_fixes():
    text = "def step(x):\n    y = x.item()\n    z = x.tolist()\n"
    lines = convert.split_lines(text)
    safe = Fix("Keep the tensor", (Edit(Position(2, 8), Position(2, 16), "x"),), Applicability.SAFE)
    unsafe = Fix("Defer the sync", (Edit(Position(3, 8), Position(3, 18), "x"),), Applicability.UNSAFE)
    d1 = diagnostic(line=2, start=8, end=16, fix=safe)
    d2 = diagnostic(code="GS102", line=3, start=8, end=18, fix=unsafe)
    everything = types.Range(start=pos(0, 0), end=pos(9, 0))
    found = actions.diagnostic_actions("file:///w/m.py", 3, text, lines, [d1, d2], everything, convert.UTF16)
    titles = [a.title for a in found]
    assert titles == ["Keep the tensor", "(unsafe) Defer the sync", "Disable GS101 for this line", "Disable GS102 for this line"]
    assert found[0].is_preferred and not found[1].is_preferred
    assert all(a.kind == "quickfix" for a in found)
    assert _apply(text, found[2].edit, "file:///w/m.py").splitlines()[1] == "    y = x.item()  # noqa: GS101"

    # Only what the cursor touches; versioned edits when the client supports them.
    on_line_3 = types.Range(start=pos(2, 10), end=pos(2, 10))
    found = actions.diagnostic_actions("file:///w/m.py", 3, text, lines, [d1, d2], on_line_3, convert.UTF16, versioned=True)
    assert [a.title for a in found] == ["(unsafe) Defer the sync", "Disable GS102 for this line"]
    assert found[0].edit.document_changes[0].text_document.version == 3
    assert actions.diagnostic_actions("u", 3, text, lines, [d1], everything, convert.UTF16, only=["source"]) == []

    fixed = apply_fixes(text, [d1, d2]).text  # what fixAll computes through `graphsafe fix`'s rounds
    action = actions.fix_all_action("file:///w/m.py", 3, text, fixed, convert.UTF16)
    assert action.kind == "source.fixAll.graphsafe"
    assert _apply(text, action.edit, "file:///w/m.py") == "def step(x):\n    y = x\n    z = x.tolist()\n"
    assert actions.has_safe_fix([d1]) and not actions.has_safe_fix([d2])


def test_gs000_gets_no_noqa_action_and_one_noqa_per_line_and_code():
    text = "x.item(); x.item()\n"
    lines = convert.split_lines(text)
    everything = types.Range(start=pos(0, 0), end=pos(1, 0))
    twice = [diagnostic(line=1, start=0, end=8), diagnostic(line=1, start=10, end=18)]
    assert [a.title for a in actions.diagnostic_actions("u", 1, text, lines, twice, everything, convert.UTF16)] == [
        "Disable GS101 for this line"
    ]
    gs000 = diagnostic("GS000", 1, 0, 0, region=None, chain=())
    assert actions.diagnostic_actions("u", 1, text, lines, [gs000], everything, convert.UTF16) == []


def test_edits_apply_as_the_client_counts_lines_and_utf16_units():
    text = "a = '\U0001d6fc'\rb = 1\r\nc = 2\x0cd\n"
    edits = [types.TextEdit(range=types.Range(start=pos(0, 6), end=pos(0, 6)), new_text="x"),  # after the 𝛼
             types.TextEdit(range=types.Range(start=pos(2, 5), end=pos(2, 6)), new_text="")]  # the form feed
    assert convert.apply_text_edits(text, edits, convert.UTF16) == "a = '\U0001d6fcx'\rb = 1\r\nc = 2d\n"
    overlapping = [edits[0], types.TextEdit(range=types.Range(start=pos(0, 0), end=pos(1, 0)), new_text="")]
    assert convert.apply_text_edits(text, overlapping, convert.UTF16) is None


def _offered(text: str, diagnostics: list[Diagnostic]) -> tuple[list[str], list[str]]:
    refused: list[str] = []
    lines = convert.split_lines(text)
    everything = types.Range(start=pos(0, 0), end=pos(len(lines), 0))
    found = actions.diagnostic_actions("u", 1, text, lines, diagnostics, everything, convert.UTF16, reject=refused.append)
    return [a.title for a in found], refused


def test_a_quick_fix_whose_result_would_not_parse_is_not_offered():
    text = "def step(x):\r    y = x.item()\r"
    broken = Fix("Keep the tensor", (Edit(Position(2, 8), Position(2, 16), "x.item("),), Applicability.SAFE)
    titles, refused = _offered(text, [diagnostic(line=2, start=8, end=16, fix=broken)])
    assert titles == ["Disable GS101 for this line"]
    assert refused == ["quick fix for GS101 at line 2 not offered: the edited text would not parse"]


def test_a_quick_fix_that_would_land_elsewhere_in_the_buffer_is_not_offered():
    text = "def step(x):\n    y = x.item()\n    z = 1\n"
    past_the_line = Fix("Keep the tensor", (Edit(Position(2, 30), Position(2, 30), "  # kept"),), Applicability.SAFE)
    titles, refused = _offered(text, [diagnostic(line=2, start=8, end=16, fix=past_the_line)])
    assert titles == ["Disable GS101 for this line"]
    assert refused == ["quick fix for GS101 at line 2 not offered: "
                       "its edits would land elsewhere in the editor's buffer than in the analysed text"]


def test_noqa_after_a_line_continuation_is_not_offered():
    text = "def step(x):\r\n    y = x.item() + \\\r\n        1\r\n"
    titles, refused = _offered(text, [diagnostic(line=2, start=8, end=16)])
    assert titles == [] and refused == ["`# noqa` for GS101 at line 2 not offered: the edited text would not parse"]


def test_fix_all_is_not_offered_when_its_edit_would_not_give_the_fixed_text(monkeypatch):
    text, fixed = "x = 1\ny = 2\n", "x = 1\ny = 3\n"
    assert actions.fix_all_action("u", 1, text, fixed, convert.UTF16) is not None
    refused: list[str] = []
    wrong_line = types.TextEdit(range=types.Range(start=pos(0, 0), end=pos(1, 0)), new_text="y = 3\n")
    monkeypatch.setattr(convert, "minimal_edit", lambda old, new, encoding: wrong_line)
    assert actions.fix_all_action("u", 1, text, fixed, convert.UTF16, reject=refused.append) is None
    assert refused == ["fix-all not offered: its edit would not give the fixed text in the editor's buffer"]


def test_kind_matching_is_hierarchical():
    assert actions.kind_wanted("source.fixAll.graphsafe", ["source.fixAll"])
    assert actions.kind_wanted("source.fixAll.graphsafe", ["source"])
    assert actions.kind_wanted("source.fixAll.graphsafe", None)
    assert not actions.kind_wanted("source.fixAll.graphsafe", ["quickfix"])
    assert not actions.kind_wanted("quickfix", ["source.fixAll"])


def test_hover_finds_codes_in_noqa_lists_and_under_diagnostics():
    line = "y = x.item()  # noqa: GS201, gs101 -- reason GS301"
    assert hover.noqa_code_at(line, line.index("GS201")) == ("GS201", line.index("GS201"), line.index("GS201") + 5)
    assert hover.noqa_code_at(line, line.index("gs101") + 5)[0] == "GS101"
    assert hover.noqa_code_at(line, line.index("GS301")) is None  # after the list
    assert hover.noqa_code_at("y = x.item()", 3) is None
    markdown, _ = hover.hover_markdown(["def step(x):", "    x.item()"], Position(2, 6), [diagnostic()])
    assert markdown.startswith("# GS101 item-sync") and "## What it does" in markdown
    assert hover.hover_markdown(["", "    x.item()"], Position(2, 1), [diagnostic()]) is None


def test_settings_errors_are_messages(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.graphsafe]\nignore = ["GS101"]\n')
    good = resolve(tmp_path)
    assert good.error is None and good.settings.ignore == ("GS101",)
    (tmp_path / "pyproject.toml").write_text("[tool.graphsafe\n")
    bad = resolve(tmp_path, fallback=good.settings)
    assert "invalid TOML" in bad.error and bad.settings is good.settings
    (tmp_path / "pyproject.toml").write_text("[tool.graphsafe]\nselect = 3\n")
    assert "must be a list of strings" in resolve(tmp_path).error
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert resolve(tmp_path).settings == Settings(root=tmp_path.resolve())


def test_index_membership_follows_excludes(tmp_path: Path):
    project = Project(tmp_path, Settings(root=tmp_path, exclude=("legacy/",)))
    assert included(tmp_path / "pkg" / "mod.py", project)
    assert not included(tmp_path / "legacy" / "old.py", project)
    assert not included(tmp_path / ".venv" / "lib" / "torch.py", project)
    assert not included(tmp_path / "notes.txt", project)


def test_server_never_writes_to_stdout_outside_the_protocol_nor_imports_torch():
    script = (
        "import os, sys\n"
        "from graphsafe.lsp.server import _protocol_streams\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "_, out = _protocol_streams()\n"
        "print('stray print')\n"
        "os.write(1, b'stray fd write')\n"
        "out.write(b'PROTOCOL'); out.flush()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"PROTOCOL"
    assert b"stray print" in done.stderr and b"stray fd write" in done.stderr


def test_index_in_a_helper_process_matches_the_index_in_process(tmp_path: Path):
    from graphsafe.lsp import index

    for name in ("a", "b"):  # two script folders with the same module names: prefixed names
        folder = tmp_path / name
        folder.mkdir()
        for i in range(index.PROCESS_MIN_FILES // 2 + 1):
            (folder / f"m{i}.py").write_text(f"import torch\n\n\ndef f{i}(x: torch.Tensor):\n    return x.item()\n")
        (folder / "bad.py").write_text("def broken(:\n")
    settings = Settings(root=tmp_path)
    files = index.workspace_files(tmp_path, settings)
    alone = index.IndexJob(files, tmp_path, None, jobs=1).run(threading.Event())
    helped = index.IndexJob(files, tmp_path, None, jobs=2).run(threading.Event())
    assert helped == alone and len(alone) == len(files)
    assert all(path == facts.path for path, facts in helped.items())
    bad = helped[str(tmp_path / "a" / "bad.py")]
    assert bad.errors[0].code == "GS000" and bad.errors[0].path == str(tmp_path / "a" / "bad.py")
    naming = index.namings(files)
    assert naming[str(tmp_path / "a" / "m0.py")].module != naming[str(tmp_path / "b" / "m0.py")].module
    assert helped[str(tmp_path / "b" / "m0.py")].module == naming[str(tmp_path / "b" / "m0.py")].module
    stopped = threading.Event()
    stopped.set()
    assert index.IndexJob(files, tmp_path, None, jobs=2).run(stopped) is None
