"""How the check and its probes talk: frames of a JSON header and raw byte blobs.

A frame is 8 bytes (the header's length and the blobs' total length, big-endian), the header
(compact JSON, holding ``sizes``: each blob's length, -1 for none) and the blobs back to back.
Histories travel as the bytes the store holds, never re-encoded (no base64, no JSON escaping), and
a whole batch is one write and one read.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import IO, Any

__all__ = ["FrameError", "read_frame", "write_frame"]

_PREFIX = struct.Struct(">II")


class FrameError(Exception):
    """The other side sent something that is not a frame (or stopped in the middle of one)."""


def write_frame(stream: IO[bytes], header: dict[str, Any], blobs: Sequence[bytes | None] = ()) -> None:
    """Write one frame and flush it."""
    sizes = [-1 if blob is None else len(blob) for blob in blobs]
    head = json.dumps({**header, "sizes": sizes}, separators=(",", ":")).encode()
    body = b"".join(blob for blob in blobs if blob)
    stream.write(_PREFIX.pack(len(head), len(body)) + head)
    stream.write(body)
    stream.flush()


def _exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if data is None or len(data) != size:
        raise FrameError(f"the stream ended inside a frame ({0 if not data else len(data)} of {size} bytes)")
    return data


def read_frame(stream: IO[bytes]) -> tuple[dict[str, Any], list[bytes | None]] | None:
    """The next frame's header and blobs; None at the end of the stream (between frames)."""
    prefix = stream.read(_PREFIX.size)
    if not prefix:
        return None
    if len(prefix) != _PREFIX.size:
        raise FrameError("the stream ended inside a frame's length")
    head_size, body_size = _PREFIX.unpack(prefix)
    try:
        header = json.loads(_exactly(stream, head_size))
    except ValueError as exc:
        raise FrameError(f"a frame header that is no JSON ({exc})") from None
    body = memoryview(_exactly(stream, body_size))
    blobs: list[bytes | None] = []
    at = 0
    for size in header.pop("sizes", []):
        if size < 0:
            blobs.append(None)
            continue
        blobs.append(bytes(body[at : at + size]))
        at += size
    if at != body_size:
        raise FrameError("a frame whose blob sizes do not add up")
    return header, blobs
