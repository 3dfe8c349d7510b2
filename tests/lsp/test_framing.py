"""FrameReader: frames out of a byte stream, whole or resynchronised, however the bytes arrive."""

from __future__ import annotations

import asyncio

import pytest

from graphsafe.lsp.framing import Frame, FrameReader

A = b'{"jsonrpc":"2.0","id":1,"method":"x"}'
B = b'{"jsonrpc":"2.0","id":2,"method":"y"}'


def frame(body: bytes, length: int | None = None) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body) if length is None else length, body)


def read(data: bytes, chunk: int, max_body: int = 1 << 20) -> list[Frame]:
    """The frames of `data` delivered `chunk` bytes at a time (a pipe may split anywhere)."""
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]

    async def read_some() -> bytes:
        return chunks.pop(0) if chunks else b""

    async def collect() -> list[Frame]:
        return [f async for f in FrameReader(read_some, max_body).frames()]

    return asyncio.run(collect())


CHUNKS = pytest.mark.parametrize("chunk", [1, 7, 4096])


@CHUNKS
def test_well_formed_frames_come_whole_and_without_a_problem(chunk: int):
    content_type = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
    data = frame(A) + content_type + frame(B) + b"\r\n" + frame(A)
    assert read(data, chunk) == [Frame(A), Frame(B), Frame(A)]


@CHUNKS
def test_too_short_a_content_length_yields_the_cut_body_then_its_rest_then_the_next_frame(chunk: int):
    assert read(frame(A, len(A) - 5) + frame(B), chunk) == [
        Frame(A[:-5]), Frame(A[-5:], "bytes before a header"), Frame(B),
    ]


@CHUNKS
@pytest.mark.parametrize("excess", [1, 3, 15, 40])
def test_too_long_a_content_length_ends_the_body_where_the_next_header_starts(chunk: int, excess: int):
    problem = f"Content-Length {len(A) + excess}, but the next header starts after {len(A)} bytes"
    assert read(frame(A, len(A) + excess) + frame(B), chunk) == [Frame(A, problem), Frame(B)]


@CHUNKS
def test_a_header_without_a_length_is_skipped_and_reading_goes_on(chunk: int):
    assert read(b"Content-Length: many\r\n\r\n" + frame(B), chunk) == [
        Frame(b"Content-Length: many", "a header without a valid Content-Length"), Frame(B),
    ]


def test_an_absurd_content_length_is_not_waited_for():
    [too_long, rest, b] = read(frame(A, 10**12) + frame(B), 4096)
    assert too_long == Frame(b"", "Content-Length 1000000000000 is over the limit of 1048576 bytes")
    assert rest == Frame(A, "bytes before a header") and b == Frame(B)


def test_a_body_that_is_not_json_is_still_a_frame_of_its_length():
    assert read(frame(b"hello") + frame(B), 3) == [Frame(b"hello"), Frame(B)]


def test_the_end_of_the_stream_inside_a_body_ends_the_frames():
    assert read(frame(A) + frame(B, 1000), 7) == [Frame(A)]


@CHUNKS
def test_a_content_type_line_before_the_next_header_stays_with_that_frame(chunk: int):
    content_type = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
    [a, b] = read(frame(A, len(A) + 80) + content_type + frame(B), chunk)
    assert a.body == A and a.problem.endswith(f"starts after {len(A)} bytes")
    assert b == Frame(B)
