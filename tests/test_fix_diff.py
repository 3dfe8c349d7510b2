"""`graphsafe fix --diff` prints patches that `git apply` and `patch -p1` apply, to exactly what `fix` writes."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.helpers import run_cli as run

# A hazard on the last line and on line 2: hunks reach both ends of the file.
SHORT = 'import torch\ng = torch.cuda.CUDAGraph()\nwith torch.autocast("cuda"):\n    with torch.cuda.graph(g):\n        pass\n'
CAFE = "# -*- coding: latin-1 -*-\n# caf\xe9\n"

CASES = {
    "no_final_newline": ("m.py", SHORT.rstrip("\n").encode()),
    "crlf": ("m.py", SHORT.replace("\n", "\r\n").encode()),
    "crlf_no_final_newline": ("m.py", SHORT.replace("\n", "\r\n").rstrip("\r\n").encode()),
    "cr_only": ("m.py", SHORT.replace("\n", "\r").encode()),
    "form_feed_before_the_hazard": ("m.py", SHORT.replace("import torch\n", "import torch\n\f\n").encode()),
    "bom_on_a_context_line": ("m.py", b"\xef\xbb\xbf" + SHORT.encode()),
    "latin1_context": ("m.py", (CAFE + SHORT).encode("latin-1")),
    "space_in_the_name": ("my step.py", SHORT.encode()),
    "name_not_utf8": (os.fsdecode(b"caf\xe9.py"), SHORT.encode()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fix_diff_applies_with_git_and_patch_to_what_fix_writes(case, tmp_path, monkeypatch, capsysbinary):
    name, content = CASES[case]
    fixed_tree, patched_tree = tmp_path / "fixed", tmp_path / "patched"
    for tree in (fixed_tree, patched_tree):
        tree.mkdir()
        (tree / name).write_bytes(content)
    monkeypatch.chdir(patched_tree)
    code, patch, err = run(capsysbinary, "fix", name, "--diff", "--no-cache")
    assert code == 1 and b"@@ " in patch, err
    (tmp_path / "fix.diff").write_bytes(patch)
    monkeypatch.chdir(fixed_tree)
    run(capsysbinary, "fix", name, "--no-cache")
    expected = (fixed_tree / name).read_bytes()
    assert expected != content

    def apply(command: list[str]) -> None:
        (patched_tree / name).write_bytes(content)
        done = subprocess.run(command, cwd=patched_tree, capture_output=True, timeout=30)
        assert done.returncode == 0, (command, done.stdout, done.stderr, patch)
        assert (patched_tree / name).read_bytes() == expected, command

    apply(["git", "apply", "--unsafe-paths", str(tmp_path / "fix.diff")])
    if shutil.which("patch"):
        apply(["patch", "-p1", "--batch", "--input", str(tmp_path / "fix.diff")])


def test_a_missing_final_newline_is_marked_and_the_next_header_starts_a_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(SHORT.rstrip("\n"))
    (tmp_path / "b.py").write_text(SHORT)
    _, out, _ = run(capsys, "fix", "a.py", "b.py", "--diff", "--no-cache")
    assert "         pass\n\\ No newline at end of file\n--- a/b.py\n" in out


def test_stdin_fix_prints_the_buffer_in_its_own_encoding_and_a_diff_that_applies(tmp_path, monkeypatch, capsysbinary):
    import io
    import sys

    content = (CAFE + SHORT).encode("latin-1").rstrip(b"\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(content)))
    code, fixed, err = run(capsysbinary, "fix", "--stdin-filename", "m.py", "-")
    assert code == 0 and err == b""
    assert fixed == content.replace(b'autocast("cuda")', b'autocast("cuda", cache_enabled=False)')
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(content)))
    code, patch, _ = run(capsysbinary, "fix", "--stdin-filename", "m.py", "--diff", "-")
    (tmp_path / "m.py").write_bytes(content)
    (tmp_path / "fix.diff").write_bytes(patch)
    done = subprocess.run(["git", "apply", "fix.diff"], cwd=tmp_path, capture_output=True, timeout=30)
    assert code == 1 and done.returncode == 0 and (tmp_path / "m.py").read_bytes() == fixed, done.stderr
