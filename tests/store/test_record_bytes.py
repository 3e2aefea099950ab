"""The record loads a bare ASCII list from its bytes, without decoding them first, and gives the
record the decoding way gives: on loadable histories, and on bytes that the two ways could read
differently (NUL, which makes JSON readers guess UTF-16; whitespace only ``str`` strips; not JSON).
"""

from __future__ import annotations

import json

import pytest

import histfix
from histfix._oneline import first_line
from histfix.store import Record, _record, examine
from histfix.store._record import examine_loaded

from store_cases import histories


def by_text(raw: bytes) -> Record:
    """The record as the decoding way makes it: the bytes as strict UTF-8 text, then loaded."""
    try:
        text = raw.decode()
    except UnicodeDecodeError as exc:
        return Record(key="k", size=len(raw), action="not_loaded", error=f"not UTF-8 text ({exc.reason})")
    if text.lstrip()[:1] == "{":
        pytest.skip("an envelope: read from the text alone")
    try:
        history = histfix.load_json(text)
    except (ValueError, TypeError) as exc:
        return Record(key="k", size=len(raw), action="not_loaded", error=first_line(exc))
    return examine_loaded("k", history, size=len(raw))


ODD = {
    "nul read as utf-16": b"[\x00]\x00",
    "nul inside": b'[{"kind": "request", "parts": []}\x00]',
    "str-only whitespace": b"\x1c[]",
    "str-only whitespace after": b"[]\x1c",
    "nul after the first four bytes": b"[    \x00]",
    "not json": b"[{",
    "empty list": b"[]",
    "latin-1": '[{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "é"}]}]'.encode(
        "latin-1"
    ),
    "utf-8": '[{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "é"}]}]'.encode(),
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_bytes_give_the_decoding_ways_record(name: str) -> None:
    raw = ODD[name]
    assert examine("k", raw) == by_text(raw)


def test_histories_give_the_decoding_ways_record() -> None:
    cases = [raw for raw in histories().values() if not raw.lstrip().startswith(b"{")]
    assert cases
    for raw in cases:
        assert examine("k", raw) == by_text(raw)


def test_an_ascii_list_is_loaded_from_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[type] = []
    steps = _record._steps()

    def load_json(data: str | bytes) -> object:
        seen.append(type(data))
        return steps.load_json(data)

    monkeypatch.setattr(_record, "_steps", lambda: steps._replace(load_json=load_json))
    ascii_history = json.dumps([{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "é"}]}])
    assert examine("k", ascii_history.encode()).kind == "pending_request"
    assert examine("k", ascii_history.encode().replace(b"\\u00e9", "é".encode())).kind == "pending_request"
    assert seen == [bytes, str]
