"""The LSP framing: bounded headers, and resynchronisation after every kind of broken frame."""

from __future__ import annotations

import json
import random

import pytest

from lsp_server.framing import MAX_BODY_BYTES, MAX_HEADER_BYTES, FrameError, FrameParser, parse_header

GOOD = {"jsonrpc": "2.0", "id": 7, "method": "cctest/stats"}


def frame(obj: object, length: int | str | None = None, extra: bytes = b"") -> bytes:
    body = json.dumps(obj).encode()
    size = len(body) if length is None else length
    return b"Content-Length: " + str(size).encode() + b"\r\n" + extra + b"\r\n" + body


def feed(data: bytes, step: int) -> list[bytes | FrameError]:
    parser = FrameParser()
    out: list[bytes | FrameError] = []
    for i in range(0, len(data), step):
        out += parser.feed(data[i : i + step])
    return out


def bodies(items: list[bytes | FrameError]) -> list[object]:
    """The bodies that are JSON (the server drops, and logs, the others)."""
    out = []
    for item in items:
        if isinstance(item, bytes):
            try:
                out.append(json.loads(item))
            except ValueError:
                continue
    return out


@pytest.mark.parametrize("step", [1, 7, 4096])
def test_valid_frames_in_any_chunking(step: int) -> None:
    data = frame(GOOD) + frame({"a": "Content-Length: 5"}, extra=b"Content-Type: application/json\r\n")
    items = feed(data * 3, step)
    assert bodies(items) == [GOOD, {"a": "Content-Length: 5"}] * 3
    assert not [i for i in items if isinstance(i, FrameError)]


BROKEN = {
    "negative length": frame({"x": 1}, -5),
    "non-numeric length": frame({"x": 1}, "abc"),
    "missing length": b"Content-Type: application/json\r\n\r\n" + json.dumps({"x": 1}).encode(),
    "length too large": frame({"x": 1}, 400),
    "length too small": frame({"x": "a long enough value"}, 4),
    "length over the body limit": frame({"x": 1}, MAX_BODY_BYTES + 1),
    "two lengths": frame({"x": 1}, extra=b"Content-Length: 3\r\n"),
    "header line without a colon": frame({"x": 1}, extra=b"nonsense\r\n"),
    "header longer than the bound": b"Content-Length: 1" + b"9" * (3 * MAX_HEADER_BYTES),
    "garbage": bytes(range(256)) * 8,
}


@pytest.mark.parametrize("name", list(BROKEN))
@pytest.mark.parametrize("step", [1, 13, 1 << 16])
def test_a_broken_frame_is_reported_and_the_next_one_is_read(name: str, step: int) -> None:
    items = feed(BROKEN[name] + frame(GOOD), step)
    assert bodies(items)[-1] == GOOD
    errors = [i for i in items if isinstance(i, FrameError)]
    not_json = [i for i in items if isinstance(i, bytes) and i != frame(GOOD).split(b"\r\n\r\n")[1]]
    assert errors or not_json, "the broken frame was neither reported nor dropped"


def test_a_header_line_without_end_keeps_memory_bounded() -> None:
    parser = FrameParser()
    chunk = b"Content-Length: 1" + b"x" * 65536
    for _ in range(200):  # 13 MB of one endless header line
        parser.feed(chunk)
        assert len(parser._buf) <= MAX_HEADER_BYTES + len(chunk)
    assert bodies(parser.feed(b"\r\n" + frame(GOOD))) == [GOOD]


def test_random_bytes_then_a_valid_frame() -> None:
    rng = random.Random(19)
    for _ in range(50):
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000)))
        pieces = [junk, frame({"x": 1}, rng.choice([-1, 0, 3, 10**6, "x"])), junk[:100]]
        rng.shuffle(pieces)
        data = b"".join(pieces) + frame(GOOD)
        assert bodies(feed(data, rng.choice([1, 5, 64, 100000])))[-1] == GOOD


def test_parse_header_names_are_case_insensitive() -> None:
    assert parse_header(b"content-length:  42 ") == 42
    with pytest.raises(FrameError, match="without a Content-Length"):
        parse_header(b"Content-Type: text/plain")
