"""histfix._cli.exits: each exit status once, each with what it means."""

from __future__ import annotations

from histfix._cli import exits


def test_each_code_once_with_its_meaning() -> None:
    codes = {name: getattr(exits, name) for name in exits.__all__ if name.startswith("EXIT_")}
    assert len(set(codes.values())) == len(codes), codes
    assert set(exits.MEANINGS) == set(codes.values())
    assert list(exits.MEANINGS) == sorted(exits.MEANINGS)
