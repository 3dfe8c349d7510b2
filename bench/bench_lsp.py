"""Latency of `graphsafe lsp`: time from a didChange to the matching publishDiagnostics.

Starts the server over stdio with the repository as its workspace (so the index holds the
corpus and the rest of the repo), waits for the index, opens torch/_tensor.py (from the
installed torch) and corpus/decode_loop/model.py, then sends N tiny incremental edits per
file and edit pattern, one at a time, with the debounce switched off through
`initializationOptions` so that every edit is analysed. Three patterns: a trailing space
added to / removed from the first line; a character typed into / deleted from a name bound
inside a function body in the middle of the file (every step valid code); an empty line
added above that line and removed (every later line moves: the full project step runs).

Baselines, measured in this process in the same run, between edits (the server is idle
then): `libcst.parse_module` of the same full text (the target: p50 ≤ 1.5×, p95 ≤ 2× of
it) and graphsafe's from-scratch per-file analysis (`analyze_text`: full parse + walk; the
server reparses only the statements an edit touched, so it can beat this). Prints a
markdown table, the load average and the command.

    python bench/bench_lsp.py [--n 40] [--file PATH ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import queue
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Client:
    """A bare JSON-RPC client over the server's stdio: exact timestamps, nothing in between."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        self.process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.responses: dict[int, queue.Queue] = {}
        self.published: queue.Queue = queue.Queue()  # (arrival time, params)
        self.logs: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = 0
            while True:
                line = stream.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n"):
                    break
            message = json.loads(stream.read(length))
            arrived = time.perf_counter()
            method = message.get("method")
            if method == "textDocument/publishDiagnostics":
                self.published.put((arrived, message["params"]))
            elif method == "window/logMessage":
                self.logs.put(message["params"]["message"])
            elif "id" in message and method is None:
                self.responses.setdefault(message["id"], queue.Queue()).put(message)
            elif "id" in message:  # a request from the server: answer with null
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def _send(self, message: dict) -> float:
        body = json.dumps(message).encode()
        sent = time.perf_counter()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()
        return sent

    def request(self, method: str, params, timeout: float = 120.0) -> dict:
        self.next_id += 1
        box = self.responses.setdefault(self.next_id, queue.Queue())
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return box.get(timeout=timeout)

    def notify(self, method: str, params) -> float:
        return self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_published(self, uri: str, version: int, timeout: float = 120.0) -> float:
        deadline = time.monotonic() + timeout
        while True:
            arrived, params = self.published.get(timeout=max(deadline - time.monotonic(), 0.01))
            if params["uri"] == uri and params.get("version") == version:
                return arrived

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
            self.process.wait(timeout=30)
        except Exception:
            self.process.kill()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _position(text: str, offset: int) -> dict:
    line = text.count("\n", 0, offset)
    return {"line": line, "character": offset - (text.rfind("\n", 0, offset) + 1)}


def trailing_space(text: str) -> tuple[str, int]:
    """Edit pattern 1: a space added to the end of the first line and taken away again."""
    return "trailing space on line 1", text.find("\n") if "\n" in text else len(text)


ASSIGNMENT = re.compile(r"^[ \t]+([A-Za-z_][A-Za-z_0-9]*)[ \t]*=[^=]", re.MULTILINE)


def typing_in_body(text: str) -> tuple[str, int]:
    """Edit pattern 2: a character typed into (and deleted from) the name an assignment binds,
    inside a function body in the middle of the file: every step is valid code."""
    middle = len(text) // 2
    found = ASSIGNMENT.search(text, text.rfind("\n", 0, middle) + 1) or ASSIGNMENT.search(text)
    if found is None:
        raise SystemExit("no indented assignment to type into")
    line = text.count("\n", 0, found.start()) + 1
    return f"typing in a body (line {line})", found.end(1)


def new_line_in_body(text: str) -> tuple[str, int]:
    """Edit pattern 3: an empty line added above that assignment and removed again. Every
    later line moves, so the project step (regions, call graph) runs in full each time."""
    label, offset = typing_in_body(text)
    return label.replace("typing in", "a new line in"), text.rfind("\n", 0, offset) + 1


PATTERNS = (trailing_space, typing_in_body, new_line_in_body)
INSERTED = {trailing_space: " ", typing_in_body: "x", new_line_in_body: "\n"}


def bench_file(client: Client, path: Path, n: int, spacing_s: float, version: int) -> list[dict]:
    """Every edit pattern on one open file; one row per pattern."""
    import libcst

    from graphsafe.analyzer.discovery import module_name
    from graphsafe.analyzer.parsing import analyze_text
    from graphsafe.rules import CHECK_RULES

    text = path.read_text(encoding="utf-8")
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}})
    client.wait_published(uri, version)
    module, is_package = module_name(path)
    rows = []
    for pattern in PATTERNS:
        label, offset = pattern(text)
        at = _position(text, offset)
        edited = text[:offset] + INSERTED[pattern] + text[offset:]
        latencies, parses, analyses = [], [], []
        for i in range(n):
            version += 1
            if i % 2 == 0:  # insert the character, then take it away again
                change = {"range": {"start": at, "end": at}, "text": edited[offset]}
                current = edited
            else:
                change = {"range": {"start": at, "end": _position(edited, offset + 1)}, "text": ""}
                current = text
            sent = client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                             "contentChanges": [change]})
            arrived = client.wait_published(uri, version)
            latencies.append(arrived - sent)
            started = time.perf_counter()
            libcst.parse_module(current)
            parses.append(time.perf_counter() - started)
            started = time.perf_counter()
            analyze_text(str(path), module, is_package, current, CHECK_RULES)
            analyses.append(time.perf_counter() - started)
            time.sleep(max(0.0, spacing_s - (time.perf_counter() - sent)))
        rows.append({
            "file": path, "edit": label, "lines": text.count("\n") + 1, "n": n,
            "parse": statistics.median(parses), "analyze": statistics.median(analyses),
            "p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95),
        })
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=40, help="edits per file (default 40)")
    parser.add_argument("--spacing", type=float, default=0.3, help="seconds between edits (default 0.3)")
    parser.add_argument("--file", action="append", type=Path, help="files to edit (default: torch/_tensor.py and the corpus model)")
    parser.add_argument("--server", default=f"{sys.executable} -m graphsafe.lsp", help="server command")
    args = parser.parse_args(argv)
    files = args.file
    if not files:
        spec = importlib.util.find_spec("torch")  # located, never imported
        if spec is None or not spec.submodule_search_locations:
            sys.stderr.write("torch is not installed: pass --file PATH\n")
            return 2
        files = [Path(spec.submodule_search_locations[0]) / "_tensor.py", ROOT / "corpus" / "decode_loop" / "model.py"]
    files = [f.resolve() for f in files]

    client = Client(args.server.split(), ROOT)
    started = time.perf_counter()
    client.request("initialize", {
        "processId": os.getpid(), "rootUri": ROOT.as_uri(), "capabilities": {},
        "workspaceFolders": [{"uri": ROOT.as_uri(), "name": ROOT.name}],
        "initializationOptions": {"debounceMs": 0},
    })
    client.notify("initialized", {})
    while "indexed" not in (message := client.logs.get(timeout=600)):
        pass
    indexed = time.perf_counter() - started
    try:
        rows = [row for k, f in enumerate(files) for row in bench_file(client, f, args.n, args.spacing, 1 + k * 10_000)]
    finally:
        client.close()

    command = " ".join(["python", "bench/bench_lsp.py", *(argv if argv is not None else sys.argv[1:])])
    print(f"`graphsafe lsp` latency, didChange → publishDiagnostics, {args.n} edits per file, debounce off; "
          f"workspace {ROOT.name}/ ({message.removeprefix('graphsafe: ')}; ready {indexed:.1f} s after start)\n")
    print("| file | lines | edit | parse p50 (ms) | analyze p50 (ms) | LSP p50 (ms) | LSP p95 (ms) | p50 / parse | p95 / parse | p50 / analyze |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        try:
            shown = r["file"].relative_to(ROOT)
        except ValueError:
            shown = Path(*r["file"].parts[-2:])
        print(f"| {shown} | {r['lines']} | {r['edit']} | {r['parse'] * 1e3:.1f} | {r['analyze'] * 1e3:.1f} | {r['p50'] * 1e3:.1f} | "
              f"{r['p95'] * 1e3:.1f} | {r['p50'] / r['parse']:.2f}× | {r['p95'] / r['parse']:.2f}× | {r['p50'] / r['analyze']:.2f}× |")
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    print(f"\nTargets: p50 ≤ 1.5× parse, p95 ≤ 2× parse. Load average (1/5/15 min) at the end: {load}. "
          f"Command: `{command}`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
