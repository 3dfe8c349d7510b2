"""Reading a source file from disk: regular files only, with a size cap.

A `*.py` that is a FIFO blocks a plain read forever, and one that links to /dev/zero reads
without end; neither is source code. Every reader of user files goes through `read_source`,
which answers the bytes or, as a sentence, why the file was not read (reported as GS000).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

# Larger files are data or generated code; libcst's cost grows with tokens (see DESIGN.md).
MAX_FILE_BYTES = 10 * 1024 * 1024

# O_NONBLOCK: should the path become a FIFO after the stat, open must not wait for a writer;
# O_BINARY: no newline translation on Windows. (Flags a platform lacks are 0.)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)

_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return f"not a regular file ({kind}); skipped"


def _too_large(size: int, limit: int) -> str:
    return f"file too large ({size / 2**20:.1f} MiB; the limit is {limit / 2**20:g} MiB); skipped"


def read_source(path: Path, limit: int = MAX_FILE_BYTES) -> bytes | str:
    """The file's bytes, or the reason it is not read."""
    try:
        # stat before open: opening a device can itself have effects (a tape rewinds)
        reason = _not_regular(os.stat(path).st_mode)
        if reason:
            return reason
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"broken symbolic link to {os.readlink(path)}"
        return "file not found"
    except PermissionError:
        return "permission denied"
    except OSError as error:
        return f"cannot read file: {error.strerror or error}"
    try:
        info = os.fstat(fd)
        reason = _not_regular(info.st_mode)
        if reason:
            return reason
        if info.st_size > limit:
            return _too_large(info.st_size, limit)
        content = _read_at_most(fd, limit + 1, info.st_size)  # limit + 1: the file may have grown since the fstat
    except OSError as error:
        return f"cannot read file: {error.strerror or error}"
    finally:
        os.close(fd)
    if len(content) > limit:
        return _too_large(len(content), limit)
    return content


def read_stdin(limit: int = MAX_FILE_BYTES) -> bytes | str:
    """Standard input's bytes, or why they are not read: the same cap as a file's (a pipe from
    /dev/zero never ends)."""
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        return f"standard input too large (over {limit / 2**20:g} MiB, the limit)"
    return data


def _read_at_most(fd: int, count: int, expected: int) -> bytes:
    """Up to `count` bytes, until end of file; `expected` (the size fstat gave) sizes the first
    read. Raw reads: a third faster than a file object's, paid for every file of a warm run."""
    chunks = []
    size = expected + 1  # one more, to see the end of the file in the same read
    while count > 0:
        chunk = os.read(fd, min(count, size))
        if not chunk:
            break
        chunks.append(chunk)
        count -= len(chunk)
        size = 1 << 20  # the file grew since the fstat: read on in pieces
    return b"".join(chunks)
