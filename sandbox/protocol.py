"""Length-prefixed frames over pipes: 4-byte big-endian length, then the payload (UTF-8 JSON).

Readers never trust the other side: every read has a size cap and an optional deadline.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

_HEADER = struct.Struct(">I")


class FrameError(Exception):
    """The peer closed the pipe, sent a malformed frame, or exceeded the size cap."""


class FrameTooLarge(FrameError):
    """The announced frame length exceeds the reader's cap."""


class FrameTimeout(FrameError):
    """No complete frame before the deadline."""


def write_frame(fd: int, payload: bytes) -> None:
    """Write one frame; loops over partial writes (pipes may take less than asked)."""
    view = memoryview(_HEADER.pack(len(payload)) + payload)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_json(fd: int, obj: Any) -> None:
    write_frame(fd, json.dumps(obj, separators=(",", ":")).encode())


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    while n > 0:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FrameTimeout("timed out waiting for a frame")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise FrameTimeout("timed out waiting for a frame")
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise FrameError("the pipe was closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, *, cap: int, deadline: float | None = None) -> bytes:
    """Read one frame of at most `cap` bytes; `deadline` is a `time.monotonic()` instant or None."""
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    if size > cap:
        raise FrameTooLarge(f"frame of {size} bytes exceeds the cap of {cap} bytes")
    return _read_exact(fd, size, deadline)


def read_json(fd: int, *, cap: int, deadline: float | None = None) -> Any:
    """Read one frame and parse it as JSON; malformed JSON is a `FrameError`."""
    data = read_frame(fd, cap=cap, deadline=deadline)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as err:
        raise FrameError(f"malformed JSON frame: {err}") from None
