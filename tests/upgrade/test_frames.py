"""Frames between the check and its probes: the stored bytes as they are, a batch per frame."""

from __future__ import annotations

import io

import pytest

from histfix.upgrade._frames import FrameError, read_frame, write_frame


def test_blobs_travel_byte_for_byte_with_their_header() -> None:
    stream = io.BytesIO()
    blobs = [b'[{"kind": "request"}]', None, b"", "ü\n\x00".encode()]
    write_frame(stream, {"op": "observe", "n": 2}, blobs)
    write_frame(stream, {"op": "trip"})
    stream.seek(0)
    assert read_frame(stream) == ({"op": "observe", "n": 2}, blobs)
    assert read_frame(stream) == ({"op": "trip"}, [])
    assert read_frame(stream) is None  # the end, between frames


@pytest.mark.parametrize("cut", [3, 8, 12, -1])
def test_a_stream_that_ends_inside_a_frame_is_a_frame_error(cut: int) -> None:
    stream = io.BytesIO()
    write_frame(stream, {"op": "observe"}, [b"history"])
    with pytest.raises(FrameError):
        read_frame(io.BytesIO(stream.getvalue()[:cut]))


def test_a_header_that_is_no_json_or_sizes_that_do_not_add_up_are_frame_errors() -> None:
    with pytest.raises(FrameError, match="no JSON"):
        read_frame(io.BytesIO(b"\x00\x00\x00\x02\x00\x00\x00\x00{x"))
    with pytest.raises(FrameError, match="do not add up"):
        read_frame(io.BytesIO(b'\x00\x00\x00\x0d\x00\x00\x00\x02{"sizes":[1]}ab'))
