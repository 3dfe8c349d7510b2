"""Putting a fixed file back on disk without losing anything.

The fixed text is written in the file's own encoding and BOM, only if the file still holds
what was read, to the file a symbolic link names (replacing the link by a regular file would
leave the real file unfixed), keeping its hard links, and never half-written.

A process killed while writing (kill -9) can leave one `.NAME.XXXXXXXX.graphsafe` beside the
file, never in its place: it holds (part of) the fixed text and may be deleted.
"""

from __future__ import annotations

import io
import os
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path

from graphsafe.analyzer.reading import read_source

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class SourceEncoding:
    encoding: str = "utf-8"
    bom: bool = False

    @classmethod
    def of(cls, content: bytes) -> "SourceEncoding":
        """The encoding PEP 263 gives `content` (coding cookie, BOM; UTF-8 otherwise)."""
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(content).readline)
        except SyntaxError:
            encoding = "utf-8"
        return cls("utf-8" if encoding == "utf-8-sig" else encoding, content.startswith(_BOM))

    def encode(self, text: str) -> bytes:
        """`text` (without a BOM) as the file's bytes; raises UnicodeEncodeError."""
        data = text.encode(self.encoding)
        return _BOM + data if self.bom else data


def write_fixed(path: Path, data: bytes, original: bytes) -> str | None:
    """Replace the file's content `original` by `data`; None on success, else the reason."""
    target = Path(os.path.realpath(path))  # a symbolic link stays; the file it names is fixed
    current = read_source(target)
    if isinstance(current, str):
        return f"cannot re-read file: {current}"
    if current != original:
        return "file changed on disk since it was read; not overwritten"
    try:
        info = os.stat(target)
        if info.st_nlink > 1:
            _overwrite_in_place(target, data, original)
        else:
            _replace(target, data, info.st_mode)
    except OSError as error:
        return f"cannot write file: {error.strerror or error}"
    return None


def write_new(path: Path, data: bytes) -> str | None:
    """Write a file graphsafe owns (the facts file): all of `data` or, on failure, what was
    there before; the folder is made. None on success, else the reason."""
    target = Path(os.path.realpath(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode if target.exists() else 0o644
        _replace(target, data, mode)
    except OSError as error:
        return f"cannot write {path}: {error.strerror or error}"
    return None


def _synced_copy(target: Path, data: bytes) -> str:
    """A temporary file beside `target` holding all of `data`, on disk."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".graphsafe")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _remove(tmp)
        raise
    return tmp


def _replace(target: Path, data: bytes, mode: int) -> None:
    """The usual case: the new content appears all at once (rename), or not at all."""
    tmp = _synced_copy(target, data)
    try:
        os.chmod(tmp, mode & 0o7777)
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise


def _overwrite_in_place(target: Path, data: bytes, original: bytes) -> None:
    """A file with several hard links: a rename would give this name a new file and leave the
    other names unfixed, so the content is copied into the file itself (as editors do).

    Written in place rather than refused, because every name of the file should see the fix
    (refusing would leave hard-linked trees unfixable). The copy starts only once the whole new
    text is on disk in a temporary file beside it (so a failure to write it, a full disk,
    touches nothing); should the copy fail, the original bytes are put back; should the process
    die during it, that temporary file still holds the whole fixed text."""
    tmp = _synced_copy(target, data)
    keep_tmp = False
    try:
        with open(target, "r+b") as handle:
            try:
                _overwrite(handle, data)
            except BaseException:
                keep_tmp = True
                _overwrite(handle, original)
                keep_tmp = False
                raise
    except OSError as error:
        if keep_tmp:  # neither text could be put in place: say where the fixed one is
            raise OSError(f"{error.strerror or error}; the fixed text is in {tmp}") from None
        raise
    finally:
        if not keep_tmp:
            _remove(tmp)


def _overwrite(handle, data: bytes) -> None:
    handle.seek(0)
    handle.write(data)
    handle.truncate()
    handle.flush()
    os.fsync(handle.fileno())


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
