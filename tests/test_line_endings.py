"""One line model everywhere: `\\r\\n`, `\\r` and `\\n` each end a line (graphsafe.lines), for
diagnostics, fixes, noqa, GS000 and the output formats, whatever endings a file uses."""

from __future__ import annotations

import difflib
import json
import re
import textwrap

import pytest

from graphsafe.lines import line_starts, lines_with_ends, position_at, split_lines
from tests.helpers import run_cli as run

# A region (torch.compile reduce-overhead) with two safe fixes (GS107 output_size, GS402 hoist),
# unsafe ones (GS101), a docstring and a continuation (tokens holding line breaks), characters
# outside ASCII and the BMP before hazards (columns count characters), and a form feed in a
# comment (a line break for str.splitlines, not for Python).
PROGRAM = textwrap.dedent('''\
    import torch  # page\x0cbreak


    class Net(torch.nn.Module):
        """A small model.

        Its docstring spans lines: one token holding line breaks.
        """

        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)

        @torch.compile(mode="reduce-overhead")
        def forward(self, x):
            y = self.proj(x)  # \U0001d6fc é
            r = torch.repeat_interleave(y, torch.tensor([1, 0, 2]), dim=0)
            scale = torch.tensor([0.5, 2.0, 1.0, 1.0], dtype=torch.float32, device="cpu")
            print("\U0001d6fcé", r.sum().item())
            return r * scale + \\
                y.sum()
''')
ENDINGS = {"lf": "\n", "crlf": "\r\n", "cr": "\r", "mixed": None}


def with_endings(text: str, ending: str | None) -> str:
    """`text` (written with "\\n") with another ending on every line, or mixed ones in turn (in an
    order where "\\r" never meets the "\\n" of an empty next line: that pair is one "\\r\\n" break)."""
    cycle = ("\n", "\r", "\r\n")
    lines = text.split("\n")
    ends = [ending or cycle[i % 3] for i in range(len(lines) - 1)]
    return "".join(line + end for line, end in zip(lines, ends)) + lines[-1]


def normalized(text: str) -> str:
    return re.sub(r"\r\n|\r", "\n", text)


def where(found: list[dict]) -> list[tuple]:
    """What a JSON report says about places: rows, columns, region rows and fix edits."""
    return [(d["code"], d["location"], d["end_location"], d["region"] and d["region"]["row"],
             d["fix"] and [(e["location"], e["end_location"], normalized(e["content"])) for e in d["fix"]["edits"]])
            for d in found]


def check_json(capsys, name: str) -> list[dict]:
    _, out, _ = run(capsys, "check", name, "--no-cache", "--format", "json")
    return json.loads(out)


def test_the_line_model_breaks_at_crlf_cr_and_lf_only():
    text = "a\r\nb\rc\nd\x0ce\u2028f"
    assert split_lines(text) == ["a", "b", "c", "d\x0ce\u2028f"]
    assert lines_with_ends(text) == ["a\r\n", "b\r", "c\n", "d\x0ce\u2028f"]
    assert line_starts(text) == [0, 3, 5, 7]
    assert position_at(text, text.index("e")) == position_at("a\nb\nc\nd\x0ce", 8)  # (4, 2)
    assert position_at(text, text.index("f")).line == 4


@pytest.mark.parametrize("kind", ["crlf", "cr", "mixed"])
def test_check_reports_the_same_rows_and_columns_for_every_line_ending(tmp_path, monkeypatch, capsys, kind):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lf.py").write_bytes(PROGRAM.encode())
    (tmp_path / "other.py").write_bytes(with_endings(PROGRAM, ENDINGS[kind]).encode())
    expected = check_json(capsys, "lf.py")
    assert [d["code"] for d in expected] == ["GS107", "GS402", "GS402", "GS501", "GS101"]
    assert expected[4]["location"] == {"row": 19, "column": 21}  # characters: the astral 𝛼 is one
    assert expected[0]["region"]["row"] == 15
    assert where(check_json(capsys, "other.py")) == where(expected)
    _, text_out, _ = run(capsys, "check", "other.py", "--no-cache")
    assert "other.py:19:21: GS101" in text_out and "p.py:15)" not in text_out and "other.py:15)" in text_out


@pytest.mark.parametrize("kind", ["crlf", "cr", "mixed"])
def test_fix_keeps_the_files_own_endings_and_fixes_as_for_lf(tmp_path, monkeypatch, capsys, kind):
    monkeypatch.chdir(tmp_path)
    original = with_endings(PROGRAM, ENDINGS[kind])
    (tmp_path / "lf.py").write_bytes(PROGRAM.encode())
    (tmp_path / "other.py").write_bytes(original.encode())
    for unsafe in ((), ("--unsafe-fixes",)):
        run(capsys, "fix", "lf.py", "other.py", "--no-cache", *unsafe)
        fixed_lf = (tmp_path / "lf.py").read_bytes().decode()
        fixed = (tmp_path / "other.py").read_bytes().decode()
        assert fixed != original and normalized(fixed) == fixed_lf
        if ENDINGS[kind]:
            assert set(re.findall(r"\r\n|\r|\n", fixed)) == {ENDINGS[kind]}
        else:  # each line the fix left alone keeps its own ending
            before, after = lines_with_ends(original), lines_with_ends(fixed)
            matcher = difflib.SequenceMatcher(None, [normalized(x) for x in before], [normalized(x) for x in after])
            kept = [(i, j, n) for i, j, n in matcher.get_matching_blocks() if n]
            assert sum(n for _, _, n in kept) >= len(before) - 3
            assert all(before[i + k] == after[j + k] for i, j, n in kept for k in range(n))
        original = fixed
    assert "output_size=3" in fixed_lf and "self._scale_const" in fixed_lf and ".item()" not in fixed_lf


def test_noqa_after_a_form_feed_silences_its_own_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    text = PROGRAM.replace('r.sum().item())', 'r.sum().item())  # noqa: GS501')
    (tmp_path / "prog.py").write_bytes(with_endings(text, "\r").encode())
    assert [d["code"] for d in check_json(capsys, "prog.py")] == ["GS107", "GS402", "GS402", "GS101"]


@pytest.mark.parametrize("ending", ["\n", "\r", "\r\n"])
def test_gs000_for_an_undecodable_byte_gives_a_character_column(tmp_path, monkeypatch, capsys, ending):
    monkeypatch.chdir(tmp_path)
    line = 'x = "é€\U0001d6fc" + '.encode()
    (tmp_path / "bad.py").write_bytes(b"\xef\xbb\xbf" + ending.join(["import torch", ""]).encode() + line + b"\xff" + ending.encode())
    [d] = check_json(capsys, "bad.py")
    assert d["code"] == "GS000" and "0xff" in d["message"]
    assert d["location"] == {"row": 2, "column": len('x = "é€𝛼" + ') + 1}  # 1-based, in characters


def test_sarif_says_what_its_rows_and_columns_count(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.py").write_bytes(with_endings(PROGRAM, "\r").encode())
    _, out, _ = run(capsys, "check", "prog.py", "--no-cache", "--format", "sarif")
    [sarif_run] = json.loads(out)["runs"]
    assert sarif_run["columnKind"] == "unicodeCodePoints"
    assert sarif_run["newlineSequences"] == ["\r\n", "\r", "\n"]
    item = [r for r in sarif_run["results"] if r["ruleId"] == "GS101"][0]
    assert item["locations"][0]["physicalLocation"]["region"]["startLine"] == 19
