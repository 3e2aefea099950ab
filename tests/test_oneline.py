"""histfix._oneline: how every one-line message cuts an error down."""

from __future__ import annotations

import pytest

from histfix._oneline import first_line, squeezed


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (ValueError("cannot read it\nTraceback follows"), "cannot read it"),
        (ValueError("\n  padded  \n"), "padded"),
        (ValueError(""), "ValueError"),  # an exception always names something
        (KeyError(), "KeyError"),
        ("TypeError: boom\nmore", "TypeError: boom"),
        ("", ""),  # a text has no type to fall back on
        (None, ""),
    ],
)
def test_first_line(error: BaseException | str | None, line: str) -> None:
    assert first_line(error) == line


def test_squeezed() -> None:
    assert squeezed(" a\n\tb  c ") == "a b c"
