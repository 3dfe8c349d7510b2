"""The `graphsafe check` command end to end: exit codes, formats, config, noqa, bad input, cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import run_cli as run

HAZARD = textwrap.dedent("""
    import torch

    def step(x: torch.Tensor):  # graphsafe: region
        v = x.item()
        torch.cuda.synchronize()
        return v
""")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "step.py").write_text(HAZARD)
    return tmp_path


def test_text_output_and_exit_codes(tree, capsys):
    code, out, _ = run(capsys, "check", "step.py", "--no-cache")
    assert code == 1
    assert "step.py:5:9: GS101 `.item()` copies a tensor to the host" in out
    assert "step.py:6:5: GS106" in out
    assert "Found 2 errors." in out
    (tree / "clean.py").write_text("import torch\n\ndef f(x):  # graphsafe: region\n    return x * 2\n")
    code, out, _ = run(capsys, "check", "clean.py", "--no-cache")
    assert code == 0 and "All checks passed!" in out
    code, _, _ = run(capsys, "check", "step.py", "--no-cache", "--exit-zero")
    assert code == 0


def test_usage_errors_exit_2(tree, capsys):
    code, _, err = run(capsys, "check", "missing.py")
    assert code == 2 and "path does not exist" in err
    code, _, err = run(capsys, "check", "step.py", "--select", "GS999")
    assert code == 2 and "unknown rule code" in err
    code, _, err = run(capsys, "rule", "nope")
    assert code == 2 and "unknown rule" in err


def test_select_and_ignore_by_prefix(tree, capsys):
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--select", "GS101")
    assert "GS101" in out and "GS106" not in out
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--ignore", "GS1")
    assert "All checks passed!" in out


def test_json_follows_ruff_schema(tree, capsys):
    code, out, _ = run(capsys, "check", "step.py", "--no-cache", "--format", "json")
    assert code == 1
    data = json.loads(out)
    first = data[0]
    assert {"code", "message", "filename", "location", "end_location", "fix", "url", "noqa_row"} <= set(first)
    assert first["location"] == {"row": 5, "column": 9}
    assert first["end_location"] == {"row": 5, "column": 17}
    assert first["region"]["name"] == "step" and first["chain"] == ["step"]


def test_sarif_is_2_1_0(tree, capsys):
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--format", "sarif")
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    run0 = log["runs"][0]
    ids = [r["id"] for r in run0["tool"]["driver"]["rules"]]
    assert ids == ["GS101", "GS106"]
    result = run0["results"][0]
    assert result["ruleId"] == "GS101" and result["level"] == "error"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 5 and region["startColumn"] == 9
    assert ids[result["ruleIndex"]] == result["ruleId"]


def test_github_annotations(tree, capsys):
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--format", "github")
    assert out.splitlines()[0].startswith("::error title=graphsafe (GS101),file=step.py,line=5,col=9,")


def test_noqa_suppresses(tree, capsys):
    (tree / "step.py").write_text(HAZARD.replace("x.item()", "x.item()  # noqa: GS101").replace(
        "synchronize()", "synchronize()  # noqa"))
    code, out, _ = run(capsys, "check", "step.py", "--no-cache")
    assert code == 0, out
    (tree / "step.py").write_text(HAZARD.replace("x.item()", "x.item()  # noqa: GS106"))
    _, out, _ = run(capsys, "check", "step.py", "--no-cache")
    assert "GS101" in out


def test_pyproject_config(tree, capsys):
    (tree / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.graphsafe]
        regions = ["loader"]
        ignore = ["GS106"]
        per-file-ignores = { "legacy/*.py" = ["GS1"] }
    """))
    (tree / "data.py").write_text("import torch\ndef loader(b: torch.Tensor):\n    return b.tolist()\n")
    (tree / "legacy").mkdir()
    (tree / "legacy" / "old.py").write_text(HAZARD)
    _, out, _ = run(capsys, "check", ".", "--no-cache")
    assert "data.py:3:12: GS102" in out
    assert "GS106" not in out
    assert "legacy" not in out
    (tree / "pyproject.toml").write_text("[tool.graphsafe]\nselects = ['GS1']\n")
    code, _, err = run(capsys, "check", ".", "--no-cache")
    assert code == 2 and "unknown [tool.graphsafe] key" in err


def test_exclude_and_gitignore(tree, capsys):
    (tree / ".git").mkdir()
    (tree / ".gitignore").write_text("generated/\n*_gen.py\n")
    for name in ("generated/a.py", "b_gen.py", ".venv/lib.py", "src/ok.py"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(HAZARD)
    _, out, _ = run(capsys, "check", ".", "--no-cache", "--format", "json")
    files = sorted({Path(d["filename"]).as_posix() for d in json.loads(out)})
    assert files == ["src/ok.py", "step.py"]
    _, out, _ = run(capsys, "check", "b_gen.py", "--no-cache", "--format", "json")
    assert json.loads(out)  # named explicitly: analysed


BAD_INPUTS = {
    "syntax.py": b"def f(:\n    pass\n",
    "latin.py": b"x = '\xff\xfe'\n",
    "empty.py": b"",
    "bom.py": b"\xef\xbb\xbfimport torch\n",
    "cookie.py": b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
    "nul.py": b"x = 1\x00\n",
}


def test_bad_input_never_crashes(tree, capsys):
    for name, content in BAD_INPUTS.items():
        (tree / name).write_bytes(content)
    (tree / "huge.py").write_text("DATA = [" + ",".join(str(i) for i in range(300000)) + "]\n")
    (tree / "broken_link.py").symlink_to(tree / "nowhere.py")
    unreadable = tree / "secret.py"
    unreadable.write_text("x = 1\n")
    unreadable.chmod(0)
    code, out, err = run(capsys, "check", ".", "--no-cache", "--format", "json")
    assert err == ""
    by_file = {}
    for d in json.loads(out):
        by_file.setdefault(Path(d["filename"]).name, []).append(d)
    assert by_file["syntax.py"][0]["code"] == "GS000"
    assert by_file["syntax.py"][0]["location"]["row"] == 1
    assert by_file["latin.py"][0]["code"] == "GS000" and "decode" in by_file["latin.py"][0]["message"]
    assert "broken symbolic link" in by_file["broken_link.py"][0]["message"]
    if os.geteuid() != 0:  # root reads anything
        assert "permission denied" in by_file["secret.py"][0]["message"]
    for fine in ("empty.py", "bom.py", "cookie.py", "huge.py"):
        assert fine not in by_file, by_file.get(fine)
    assert "step.py" in by_file  # the good file is still analysed
    assert code == 1


def test_cache_gives_same_result_and_invalidates(tree, capsys):
    args = ("check", "step.py", "--format", "json", "--cache-dir", str(tree / "cache"))
    _, first, _ = run(capsys, *args)
    assert (tree / "cache").is_dir()
    _, second, _ = run(capsys, *args)
    assert first == second
    (tree / "step.py").write_text(HAZARD.replace("v = x.item()", "v = x"))
    _, third, _ = run(capsys, *args)
    assert [d["code"] for d in json.loads(third)] == ["GS106"]


def test_parallel_equals_serial(tree, capsys):
    for i in range(12):
        (tree / f"m{i}.py").write_text(HAZARD)
    _, serial, _ = run(capsys, "check", ".", "--no-cache", "--jobs", "1", "--format", "json")
    _, parallel, _ = run(capsys, "check", ".", "--no-cache", "--jobs", "2", "--format", "json")
    assert serial == parallel and len(json.loads(serial)) == 26


def test_stdin_mode(tree):
    result = subprocess.run(
        [sys.executable, "-m", "graphsafe", "check", "--stdin-filename", "buffer.py", "-", "--no-cache"],
        input=HAZARD, capture_output=True, text=True, cwd=tree,
    )
    assert result.returncode == 1
    assert result.stdout.startswith("buffer.py:5:9: GS101")


def test_rule_docs_command(capsys):
    code, out, _ = run(capsys, "rule", "GS101")
    assert code == 0 and out.startswith("# GS101 item-sync") and "## Why is this bad?" in out
    code, out, _ = run(capsys, "rule", "tensor-branch")
    assert code == 0 and "GS201" in out
    code, out, _ = run(capsys, "rules")
    assert "GS108  bool-mask-index" in out


def test_static_path_never_imports_torch(tree):
    probe = (
        "import sys\n"
        "from graphsafe.cli import main\n"
        "code = main(['check', 'step.py', '--no-cache', '--quiet'])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print('ok', code)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tree)
    assert result.stdout.strip().splitlines()[-1] == "ok 1", result.stderr


def test_internal_errors_have_no_traceback(tree, capsys, monkeypatch):
    import graphsafe.analyzer.engine as engine

    def boom(*a, **k):
        raise RuntimeError("kaput")

    monkeypatch.setattr(engine, "check_paths", boom)
    code, _, err = run(capsys, "check", "step.py")
    assert code == 2 and "internal error: RuntimeError: kaput" in err and "Traceback" not in err
