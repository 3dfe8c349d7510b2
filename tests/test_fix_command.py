"""`graphsafe fix`: diff, write, rounds, idempotence, encodings, line endings, concurrent edits."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.helpers import run_cli as run

PROGRAM = textwrap.dedent("""\
    import torch

    def main(loader, model):
        static_x = torch.zeros(4, 8)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        g = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):  # keep this comment
            with torch.cuda.graph(g):
                loss = model(static_x).sum()
                opt.step()
        for batch in loader:
            static_x = batch.cuda()
            g.replay()
""")
BEFORE = 'with torch.autocast("cuda", dtype=torch.bfloat16):'
AFTER = 'with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):'


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.py").write_text(PROGRAM)
    return tmp_path


def test_diff_changes_nothing(tree, capsys):
    code, out, err = run(capsys, "fix", "prog.py", "--diff", "--no-cache")
    assert code == 1
    assert f"-    {BEFORE}  # keep this comment" in out
    assert f"+    {AFTER}  # keep this comment" in out
    assert "capturable" not in out and "copy_" not in out  # unsafe: not without --unsafe-fixes
    assert (tree / "prog.py").read_text() == PROGRAM


def test_fix_writes_and_is_idempotent(tree, capsys):
    code, out, _ = run(capsys, "fix", "prog.py", "--no-cache")
    assert code == 1  # GS701 and GS401 remain (their fixes are unsafe)
    assert "(1 fixed, 2 remaining)" in out
    first = (tree / "prog.py").read_text()
    assert first == PROGRAM.replace(BEFORE, AFTER)
    run(capsys, "fix", "prog.py", "--no-cache")
    assert (tree / "prog.py").read_text() == first
    code, out, _ = run(capsys, "fix", "prog.py", "--no-cache", "--unsafe-fixes")
    fixed = (tree / "prog.py").read_text()
    assert code == 0 and "capturable=True" in fixed and "static_x.copy_(batch.cuda())" in fixed


def test_crlf_bom_and_latin1_are_kept(tree, capsys):
    crlf = PROGRAM.replace("\n", "\r\n").encode()
    (tree / "crlf.py").write_bytes(crlf)
    (tree / "bom.py").write_bytes(b"\xef\xbb\xbf" + PROGRAM.encode())
    latin = ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + PROGRAM).encode("latin-1")
    (tree / "latin.py").write_bytes(latin)
    run(capsys, "fix", ".", "--no-cache")
    assert (tree / "crlf.py").read_bytes() == crlf.replace(BEFORE.encode(), AFTER.encode())
    assert (tree / "bom.py").read_bytes().startswith(b"\xef\xbb\xbfimport torch")
    fixed_latin = (tree / "latin.py").read_bytes()
    assert b"caf\xe9" in fixed_latin and AFTER.encode() in fixed_latin


def test_file_changed_on_disk_is_not_overwritten(tree, monkeypatch, capsys):
    import graphsafe.fixer as fixer

    original = fixer.fix_text

    def edit_meanwhile(*args, **kwargs):
        outcome = original(*args, **kwargs)
        (tree / "prog.py").write_text(PROGRAM + "# edited by the user\n")
        return outcome

    monkeypatch.setattr(fixer, "fix_text", edit_meanwhile)
    code, _, err = run(capsys, "fix", "prog.py", "--no-cache")
    assert "changed on disk" in err
    assert (tree / "prog.py").read_text().endswith("# edited by the user\n")


def test_invalid_fix_output_is_never_written(tree, monkeypatch, capsys):
    import graphsafe.fixer as fixer
    from graphsafe.fixes import Applied

    def broken(text, diagnostics, unsafe=False):
        return Applied(text + "def (:\n", tuple(diagnostics), ())

    monkeypatch.setattr(fixer, "apply_fixes", broken)
    _, _, err = run(capsys, "fix", "prog.py", "--no-cache")
    assert "invalid syntax" in err
    assert (tree / "prog.py").read_text() == PROGRAM


def test_stdin_fix_prints_the_fixed_buffer(tree):
    result = subprocess.run(
        [sys.executable, "-m", "graphsafe", "fix", "--stdin-filename", "prog.py", "-"],
        input=PROGRAM, capture_output=True, text=True, cwd=tree,
    )
    assert AFTER in result.stdout
    assert result.returncode == 1  # the unsafe GS701 and GS401 remain


def test_removing_every_statement_of_a_block_keeps_it_valid(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    source = textwrap.dedent("""\
        import torch

        def report(x: torch.Tensor):  # graphsafe: region
            print(f"mean {x.mean()}")
            print(f"max {x.max()}")
    """)
    (tmp_path / "r.py").write_text(source)
    code, _, err = run(capsys, "fix", "r.py", "--no-cache", "--unsafe-fixes")
    fixed = (tmp_path / "r.py").read_text()
    assert err == "" and fixed.endswith("def report(x: torch.Tensor):  # graphsafe: region\n    pass\n"), fixed


LOGGED_BRANCHES = textwrap.dedent("""\
    import logging

    import torch

    log = logging.getLogger(__name__)


    def step(x, limit: float):  # graphsafe: region
        loss = (x * 2).sum()
        if loss > limit:
            log.warning("loss spike %.3f", loss.item())
        y = x + 1
        if x.is_cuda:
            torch.cuda.synchronize()
        if log.isEnabledFor(10):
            print(f"{loss:.3f}")
        return y
""")


def test_removing_an_ifs_only_statement_removes_the_if_when_its_test_only_reads(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(LOGGED_BRANCHES)
    code, out, err = run(capsys, "fix", "m.py", "--unsafe-fixes", "--no-cache")
    fixed = (tmp_path / "m.py").read_text()
    assert "if loss > limit" not in fixed and "loss.item()" not in fixed  # no branch on a tensor left
    assert "if x.is_cuda" not in fixed and "synchronize" not in fixed
    # a test that calls something unknown may have effects: the `if` stays, with a `pass`
    assert "    if log.isEnabledFor(10):\n        pass\n" in fixed
    compile(fixed, "m.py", "exec")
    assert run(capsys, "fix", "m.py", "--unsafe-fixes", "--no-cache")[0] == 0  # nothing left to change


@pytest.mark.parametrize("source, pure", [
    ("loss > limit", True), ("x.is_cuda and not flag", True), ("torch.isnan(x).any()", True),
    ("x.isnan().any() or len(xs) > 3", True), ("cfg['k'] >= 2", True), ("log.isEnabledFor(10)", False),
    ("next(it) > 0", False), ("(y := x.sum()) > 0", False),
])
def test_side_effect_free_tests(source, pure):
    import libcst as cst

    from graphsafe.rewriters.edits import is_side_effect_free

    assert is_side_effect_free(cst.parse_expression(source)) is pure
