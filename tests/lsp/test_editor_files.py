"""The editor-facing files stay in step with the server: pre-commit hooks and docs/editors.md."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_pre_commit_hooks():
    yaml = pytest.importorskip("yaml")
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["graphsafe-check"]["entry"] == "graphsafe check"
    assert hooks["graphsafe-fix"]["entry"] == "graphsafe fix"
    for hook in hooks.values():
        assert hook["types"] == ["python"] and hook["require_serial"] is True and hook["language"] == "python"


def test_editor_docs_name_real_options():
    text = (ROOT / "docs" / "editors.md").read_text()
    server = (ROOT / "graphsafe" / "lsp" / "server.py").read_text()
    for option in ("debounceMs", '"index"', '"cache"', "maxLiveBytes", "--stdio", "--log-level", "source.fixAll.graphsafe"):
        assert option.strip('"') in text
        assert option in server or option == "source.fixAll.graphsafe"
    assert "vim.lsp.start" in text and "languages.toml" in text and "glspc.server.command" in text


def test_graphsafe_lsp_subcommand(tmp_path: Path):
    import json
    import subprocess
    import sys

    from graphsafe import cli

    if "lsp" not in cli.COMMANDS:
        pytest.skip("`graphsafe lsp` is not wired into graphsafe/cli.py yet")
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"capabilities": {}, "rootUri": tmp_path.as_uri(), "initializationOptions": {"index": False}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    data = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in (json.dumps(m).encode() for m in messages))
    done = subprocess.run([sys.executable, "-m", "graphsafe", "lsp", "--stdio"], input=data, capture_output=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert b'"id": 1' in done.stdout and b'"id": 2' in done.stdout
