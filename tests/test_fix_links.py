"""`graphsafe fix` and links: through symbolic links to their target, once per file, hard links kept."""

from __future__ import annotations

import errno
import os
import textwrap

import pytest

from tests.helpers import run_cli as run

PROGRAM = textwrap.dedent("""\
    import torch

    def main(model, x):
        g = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            with torch.cuda.graph(g):
                model(x)
""")
FIXED = PROGRAM.replace('dtype=torch.bfloat16)', 'dtype=torch.bfloat16, cache_enabled=False)')


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "target.py").write_text(PROGRAM)
    return tmp_path


def leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".graphsafe"))


def test_fix_writes_through_a_symlink_to_its_target(tree, capsys):
    (tree / "link.py").symlink_to("real/target.py")
    code, out, err = run(capsys, "fix", "link.py", "--no-cache")
    assert code == 0 and err == "" and "(1 fixed, 0 remaining)" in out
    assert (tree / "link.py").is_symlink() and os.readlink(tree / "link.py") == "real/target.py"
    assert (tree / "real" / "target.py").read_text() == FIXED


def test_a_file_found_under_several_names_is_fixed_once(tree, capsys):
    (tree / "a_link.py").symlink_to("real/target.py")
    (tree / "b_link.py").symlink_to(tree / "real" / "target.py")
    os.link(tree / "real" / "target.py", tree / "hard.py")
    code, out, err = run(capsys, "fix", ".", "a_link.py", "--no-cache")
    assert err == "" and code == 0 and "(1 fixed, 0 remaining)" in out  # not "changed on disk" for the others
    assert (tree / "real" / "target.py").read_text() == FIXED
    assert (tree / "a_link.py").is_symlink() and (tree / "b_link.py").is_symlink()
    assert os.path.samefile(tree / "hard.py", tree / "real" / "target.py")


def test_fix_diff_shows_a_file_found_under_several_names_once(tree, capsys):
    (tree / "link.py").symlink_to("real/target.py")
    code, out, _ = run(capsys, "fix", ".", "--diff", "--no-cache")
    assert code == 1 and out.count("+++ ") == 1 and "+++ b/real/target.py" in out  # the file itself, not the link


def test_fix_keeps_hard_links(tree, capsys):
    target = tree / "real" / "target.py"
    os.link(target, tree / "other_name.txt")  # a name the walk does not pick up
    target.chmod(0o640)
    code, _, err = run(capsys, "fix", "real", "--no-cache")
    assert code == 0 and err == ""
    assert os.path.samefile(target, tree / "other_name.txt") and target.stat().st_nlink == 2
    assert (tree / "other_name.txt").read_text() == FIXED
    assert target.stat().st_mode & 0o777 == 0o640
    assert leftovers(tree / "real") == []


def test_a_failed_in_place_write_puts_the_original_back(tree, capsys, monkeypatch):
    import graphsafe.writing as writing

    target = tree / "real" / "target.py"
    os.link(target, tree / "other_name.txt")
    real_overwrite = writing._overwrite
    calls = []

    def disk_full_halfway(handle, data):
        calls.append(data)
        if len(calls) == 1:
            handle.seek(0)
            handle.write(data[:20])  # what a write cut short by a full disk leaves
            handle.flush()
            raise OSError(errno.ENOSPC, "No space left on device")
        real_overwrite(handle, data)

    monkeypatch.setattr(writing, "_overwrite", disk_full_halfway)
    code, _, err = run(capsys, "fix", "real", "--no-cache")
    assert "cannot write file: No space left on device" in err and code == 1
    assert target.read_text() == PROGRAM and os.path.samefile(target, tree / "other_name.txt")
    assert leftovers(tree / "real") == []


def test_a_failed_rename_leaves_the_file_and_no_temporary(tree, capsys, monkeypatch):
    import graphsafe.writing as writing

    def refuse(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(writing.os, "replace", refuse)
    code, _, err = run(capsys, "fix", "real", "--no-cache")
    assert "cannot write file: Invalid cross-device link" in err and code == 1
    assert (tree / "real" / "target.py").read_text() == PROGRAM
    assert leftovers(tree / "real") == []
