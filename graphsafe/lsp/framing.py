"""The LSP base protocol's frames (`Content-Length: N` headers, a blank line, N bytes) from a byte stream.

pygls' reader trusts every header: after one wrong Content-Length it reads the next message's
header as body (or a body as header) and never finds a frame again, so the server stays alive
but deaf. This reader resynchronises instead. It relies on one fact: a JSON text cannot hold a
raw line break inside a string, and holds no bare words outside one, so `Content-Length: N`
followed by CRLF never occurs inside a valid body. Where it does occur, a new frame starts there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import AsyncIterator, Awaitable, Callable

HEADER_END = b"\r\n\r\n"
MAX_BODY = 1 << 28  # a larger Content-Length is a corrupt header, not a message to wait for

# Spelt as the LSP spec and every client spell it (and pygls reads it): a literal the regex
# engine finds fast, where a case-insensitive pattern would cost 50 ms per MB of body.
_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d+)[ \t]*(?:\r\n|$)")
# A frame's start inside bytes that should have been a body; a Content-Type line may come first.
_FRAME_START = re.compile(rb"Content-Length:[ \t]*\d+[ \t]*\r\n")
_TYPE_LINE_BEFORE = re.compile(rb"Content-Type:[^\r\n]*\r\n")
_HEADER_LINES = re.compile(rb"(?:[A-Za-z][A-Za-z0-9-]*:[^\r\n]*\r\n)*")
# The first bytes of a Content-Length header, cut off by the end of what has arrived so far.
_LENGTH_WORD = b"Content-Length:"
_HEADER_BEGINNING = re.compile(
    b"|".join(re.escape(_LENGTH_WORD[:n]) for n in range(1, len(_LENGTH_WORD))) + rb"|Content-Length:[ \t]*\d*[ \t]*\r?"
)
_HEADER_BEGINNING_MAX = 40


@dataclass(frozen=True)
class Frame:
    """A body to handle; `problem` says why its framing was wrong (the body may still be a whole message)."""

    body: bytes
    problem: str | None = None


class FrameReader:
    """Frames from `read_some()` (the next bytes available, b"" at the end of the stream)."""

    def __init__(self, read_some: Callable[[], Awaitable[bytes]], max_body: int = MAX_BODY) -> None:
        self._read_some = read_some
        self._max_body = max_body
        self._buffer = bytearray()
        self._ended = False

    async def _fill(self) -> bool:
        """Read more bytes into the buffer; False at the end of the stream."""
        if self._ended:
            return False
        chunk = await self._read_some()
        if not chunk:
            self._ended = True
            return False
        self._buffer += chunk
        return True

    def _take(self, n: int) -> bytes:
        taken = bytes(self._buffer[:n])
        del self._buffer[:n]
        return taken

    async def frames(self) -> AsyncIterator[Frame]:
        while True:
            end = self._buffer.find(HEADER_END)
            if end < 0:
                if await self._fill():
                    continue
                if self._buffer.strip():
                    yield Frame(self._take(len(self._buffer)), "the stream ended inside a header")
                return
            block = self._take(end + len(HEADER_END))[:end]
            lengths = list(_LENGTH.finditer(block))
            if not lengths:
                yield Frame(block, "a header without a valid Content-Length")
                continue
            found = lengths[-1]
            line_break = block.rfind(b"\r\n", 0, found.start())
            line_start = line_break + 2 if line_break >= 0 else 0
            before, inline = block[:line_start], block[line_start : found.start()]
            garbage = (b"" if _HEADER_LINES.fullmatch(before) else before) + inline
            if garbage.strip():
                # The rest of a body whose Content-Length was too small, or bytes from nowhere.
                yield Frame(garbage, "bytes before a header")
            length = int(found.group(1))
            if length > self._max_body:
                yield Frame(b"", f"Content-Length {length} is over the limit of {self._max_body} bytes")
                continue
            frame = await self._body(length)
            if frame is None:
                return
            yield frame

    async def _body(self, length: int) -> Frame | None:
        """The next `length` bytes, cut short where another frame's header starts inside them."""
        scanned = 0
        while True:
            # A header that starts inside the declared body may end beyond it: search past `length`.
            start = self._frame_start(max(0, scanned - 64))
            if start is not None and start < length:
                body = self._take(start)
                return Frame(body, f"Content-Length {length}, but the next header starts after {len(body)} bytes")
            if len(self._buffer) >= length and not self._header_begins_in(length):
                return Frame(self._take(length))
            scanned = len(self._buffer)  # re-scan a little of it next time: a header may straddle two reads
            if not await self._fill():
                return None  # the client went away mid-message: nobody is left to answer

    def _frame_start(self, pos: int) -> int | None:
        """Where the first frame header at or after `pos` starts, with the Content-Type line before it."""
        found = _FRAME_START.search(self._buffer, pos)
        if found is None:
            return None
        type_line = self._buffer.rfind(b"Content-Type:", max(0, found.start() - 512), found.start())
        if type_line >= 0 and _TYPE_LINE_BEFORE.fullmatch(self._buffer, type_line, found.start()):
            return type_line
        return found.start()

    def _header_begins_in(self, length: int) -> bool:
        """Whether the buffer ends in the first bytes of a header that starts inside the declared body.

        Then the rest of that header is on its way: wait for it rather than take a body that holds
        half a header. A valid JSON text never ends in such bytes, so a correct frame never waits.
        """
        first = max(0, len(self._buffer) - _HEADER_BEGINNING_MAX)
        return any(_HEADER_BEGINNING.fullmatch(self._buffer, i) for i in range(first, min(length, len(self._buffer))))
