"""What `check` and `fix` read: regular files only, size-capped; names that are not UTF-8."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphsafe.analyzer.reading import MAX_FILE_BYTES, read_source
from tests.helpers import run_cli as run

HAZARD = textwrap.dedent("""\
    import torch

    def step(x: torch.Tensor):  # graphsafe: region
        return x.item()
""")
AUTOCAST = textwrap.dedent("""\
    import torch

    def main(model, x):
        g = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            with torch.cuda.graph(g):
                model(x)
""")
ROOT = Path(__file__).resolve().parents[1]
FIXED = 'with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):'


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "step.py").write_text(HAZARD)
    return tmp_path


def by_file(out: str) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for d in json.loads(out):
        found.setdefault(d["filename"], []).append(d)
    return found


def test_fifos_devices_and_sockets_named_py_are_reported_and_never_read(tree):
    os.mkfifo(tree / "pipe.py")  # a plain open() of it waits for a writer forever
    (tree / "zero.py").symlink_to("/dev/zero")  # reads without end
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tree / "sock.py"))
    try:
        # a subprocess, so that a regression fails by its timeout instead of hanging the suite
        result = subprocess.run(
            [sys.executable, "-m", "graphsafe", "check", ".", "pipe.py", "--no-cache", "--format", "json"],
            capture_output=True, text=True, cwd=tree, timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},  # this checkout's graphsafe, not the installed one
        )
    finally:
        listener.close()
    found = by_file(result.stdout)
    assert result.returncode == 1 and result.stderr == ""
    assert [d["message"] for d in found["pipe.py"]] == ["not a regular file (a named pipe); skipped"]
    assert [d["message"] for d in found["zero.py"]] == ["not a regular file (a character device); skipped"]
    assert [d["message"] for d in found["sock.py"]] == ["not a regular file (a socket); skipped"]
    assert all(d["code"] == "GS000" for name in ("pipe.py", "zero.py", "sock.py") for d in found[name])
    assert [d["code"] for d in found["step.py"]] == ["GS101"]  # the real file is still analysed


def test_a_file_over_the_size_cap_is_one_gs000_file_too_large(tree, capsys):
    with open(tree / "table.py", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: costs no disk and no time
    code, out, err = run(capsys, "check", ".", "--no-cache", "--format", "json")
    found = by_file(out)
    assert code == 1 and err == ""
    assert [d["code"] for d in found["table.py"]] == ["GS000"]
    assert found["table.py"][0]["message"].startswith("file too large (10.0 MiB; the limit is 10 MiB)")
    assert [d["code"] for d in found["step.py"]] == ["GS101"]


def test_the_size_cap_is_exact(tmp_path):
    target = tmp_path / "m.py"
    target.write_bytes(b"x = 1\n" * 100)
    assert read_source(target, limit=600) == b"x = 1\n" * 100
    assert read_source(target, limit=599).startswith("file too large")


def test_a_file_that_grows_past_the_cap_after_its_size_was_taken_is_too_large(tmp_path, monkeypatch):
    import graphsafe.analyzer.reading as reading

    target = tmp_path / "m.py"
    target.write_bytes(b"x = 1\n" * 100)
    real_fstat = os.fstat

    def size_taken_when_it_was_small(fd):
        info = real_fstat(fd)
        return os.stat_result((*info[:6], 6, *info[7:]))  # st_size: one line

    monkeypatch.setattr(reading.os, "fstat", size_taken_when_it_was_small)
    assert read_source(target, limit=599).startswith("file too large")
    assert read_source(target, limit=600) == b"x = 1\n" * 100


def test_a_file_name_that_is_not_utf8_is_analysed_reported_and_fixed(tree, capsysbinary):
    raw = b"caf\xe9.py"  # Latin-1 bytes: not UTF-8; Python holds the name with a surrogate escape
    (tree / os.fsdecode(raw)).write_text(AUTOCAST)
    code, out, err = run(capsysbinary, "check", ".", "--no-cache", "--format", "json")
    assert code == 1 and err == b""
    assert [d["code"] for d in by_file(out.decode("utf-8"))[os.fsdecode(raw)]] == ["GS702"]  # valid UTF-8 JSON
    code, out, err = run(capsysbinary, "check", ".", "--no-cache", "--format", "sarif")
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(out.decode("utf-8"))["runs"][0]["results"]]
    assert code == 1 and os.fsdecode(raw) in uris
    code, out, err = run(capsysbinary, "check", ".", "--no-cache")
    assert code == 1 and err == b"" and raw + b":5:10: GS702" in out  # text shows the name's own bytes
    code, out, err = run(capsysbinary, "fix", ".", "--no-cache")
    assert err == b"" and FIXED in (tree / os.fsdecode(raw)).read_text()


def test_a_symlink_to_a_directory_named_on_the_command_line_is_walked(tree, capsys):
    (tree / "src").mkdir()
    (tree / "step.py").rename(tree / "src" / "step.py")
    (tree / "linked").symlink_to(tree / "src", target_is_directory=True)
    code, out, err = run(capsys, "check", "linked", "--no-cache", "--format", "json")
    assert code == 1 and err == ""
    assert [(d["filename"], d["code"]) for d in json.loads(out)] == [("linked/step.py", "GS101")]


def test_the_editor_index_reads_a_fifo_as_one_gs000_without_blocking(tmp_path):
    import threading

    from graphsafe.analyzer.discovery import ModuleNaming
    from graphsafe.lsp.index import read_facts

    pipe = tmp_path / "pipe.py"
    os.mkfifo(pipe)
    found = []
    reader = threading.Thread(target=lambda: found.append(read_facts(str(pipe), ModuleNaming("pipe", False))), daemon=True)
    reader.start()
    reader.join(timeout=5)
    if reader.is_alive():  # blocked on open(): give it a writer so that the thread ends
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
    assert found and [e.message for e in found[0].errors] == ["not a regular file (a named pipe); skipped"]


@pytest.mark.parametrize("command", ["check", "fix"])
def test_standard_input_over_the_size_cap_is_a_usage_error_and_prints_nothing(command, capsys, monkeypatch):
    import io

    from graphsafe.analyzer import reading
    from tests.helpers import run_cli

    # a pipe from /dev/zero never ends: the read stops one byte past the cap
    monkeypatch.setattr(reading.read_stdin, "__defaults__", (64,))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"x = 1\n" * 20)))
    code, out, err = run_cli(capsys, command, "-")
    assert code == 2 and out == ""
    assert err.startswith("graphsafe: error: standard input too large (over ")
