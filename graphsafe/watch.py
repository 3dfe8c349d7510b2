"""`graphsafe check --watch`: check, then check again whenever a file changes (by polling the
modification times of the files found and the config file; no extra dependency)."""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable, TextIO

POLL_SECONDS = 0.5


def snapshot(files: Iterable[Path]) -> dict[Path, tuple[int, int] | None]:
    """Each file's (mtime in ns, size), None for one that is gone."""
    state: dict[Path, tuple[int, int] | None] = {}
    for path in files:
        try:
            info = os.stat(path)
            state[path] = (info.st_mtime_ns, info.st_size)
        except OSError:
            state[path] = None
    return state


def watch(check: Callable[[], int], files: Callable[[], list[Path]], out: TextIO, *,
          poll: float = POLL_SECONDS, runs: int | None = None, sleep: Callable[[float], None] = time.sleep) -> int:
    """Run `check` now and after every change in `files()` or their directories (asked again
    after each run, so new files are seen); `runs` bounds the number of checks (for tests). Ctrl-C ends it with 0."""
    done = 0
    try:
        while True:
            out.write(f"[{datetime.now():%H:%M:%S}] {'Starting linter in watch mode' if not done else 'File change detected'}...\n\n")
            out.flush()
            code = check()
            done += 1
            if runs is not None and done >= runs:
                return code
            found = files()
            watched = [*found, *{path.parent for path in found}]  # a new file changes its directory's mtime
            before = snapshot(watched)
            while snapshot(watched) == before:
                sleep(poll)
    except KeyboardInterrupt:
        return 0
