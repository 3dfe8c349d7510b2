"""A long-lived process that imports torch once and runs each corpus program in a fork of itself.

Started by tests/program_runner.py as `python -m tests.program_worker`. Protocol, one JSON object per
line: a request `{"folder": "/abs/path", "repeat": n}` on stdin; a reply on stdout
`{"results": [{...}, ...] | null, "types": {name: type name}, "exit": int, "stderr": "..."}`: the
outputs of n calls of run(steps=2) on one import of the program, and the types run() returned.

Each program gets a process of its own, as a fresh interpreter would give it: sibling modules
(`model`, `train`) share names across programs, and a program may leave global state (seeds, the
default dtype) behind. A fork costs milliseconds where `python -c "import torch"` cost ~2.5 s of CPU.
This process never runs a torch op, so no intra-op thread pool exists when it forks (OpenMP pools
do not survive a fork)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import traceback

import torch
# What a training step imports on first use (the optimizer's step imports torch._dynamo, ~1 s):
# imported here once instead of in every child. Importing starts no thread.
import torch._dynamo  # noqa: F401
import torch.optim  # noqa: F401
import torch.utils.data  # noqa: F401

_STDERR_TAIL = 3000


def _child(folder: str, repeat: int, result_fd: int, log_fd: int) -> None:
    """Runs run(steps=2) of `folder` `repeat` times, writes the dicts as JSON to result_fd; never returns."""
    code = 1
    try:
        os.dup2(log_fd, 1)  # the program's prints must not reach the protocol channel
        os.dup2(log_fd, 2)
        sys.dont_write_bytecode = True
        torch.set_num_threads(1)
        sys.path.insert(0, folder)
        os.chdir(folder)
        spec = importlib.util.spec_from_file_location("corpus_run", os.path.join(folder, "run.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        outputs = [module.run(steps=2) for _ in range(repeat)]
        reply = {"results": [{str(k): float(v) for k, v in out.items()} for out in outputs],
                 "types": {str(k): type(v).__name__ for k, v in outputs[0].items()}}
        with os.fdopen(result_fd, "w") as out:
            out.write(json.dumps(reply))  # floats exactly: json writes repr (and NaN, Infinity)
        code = 0
    except BaseException:  # noqa: BLE001 - everything a program raises is its failure, reported
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run_one(folder: str, repeat: int = 1) -> dict:
    read_fd, write_fd = os.pipe()
    with tempfile.TemporaryFile() as log:
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _child(folder, repeat, write_fd, log.fileno())
        os.close(write_fd)
        with os.fdopen(read_fd) as result_pipe:
            text = result_pipe.read()
        _, status = os.waitpid(pid, 0)
        log.seek(0)
        stderr = log.read().decode("utf-8", "replace")[-_STDERR_TAIL:]
    exit_code = os.waitstatus_to_exitcode(status)
    reply = json.loads(text) if exit_code == 0 and text else {"results": None, "types": {}}
    return {**reply, "exit": exit_code, "stderr": stderr}


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            request = json.loads(line)
            reply = run_one(request["folder"], request.get("repeat", 1))
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
