"""Why a JSON document does not parse, as one complete sentence, and whether only its end is missing.

``json.JSONDecodeError`` points at the *start* of what it could not finish (an unterminated
string is reported where the string opens), so "the error is at the end" misses most truncated
files. Instead the document is scanned once: it ends early exactly when everything in it is a
valid beginning of some JSON document.
"""

from __future__ import annotations

import json
import re

__all__ = ["describe_json_error", "ends_early"]

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_PLAIN_CHARS = re.compile(r'[^"\\\x00-\x1f]*')  # what a string holds between escapes
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
# Every beginning of a number: "-", "1.", "1e", "1.5e+" are all unfinished numbers.
_NUMBER_START = re.compile(r"-?(?:(?:0|[1-9]\d*)(?:\.\d*|(?:\.\d+)?[eE][-+]?\d*)?)?")
_NUMBER_CHARS = re.compile(r"[-+.eE0-9]*")
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")  # what json.loads accepts
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = frozenset('"\\/bfnrt')

_OPEN, _BROKEN = -1, -2  # a string that runs to the end of the document; one that is invalid


def _string_end(doc: str, start: int) -> int:
    """Index just past the string opening at ``start``, or ``_OPEN`` / ``_BROKEN``."""
    i, n = start + 1, len(doc)
    while True:
        i = _PLAIN_CHARS.match(doc, i).end()  # type: ignore[union-attr]  # the pattern matches ""
        if i == n:
            return _OPEN
        char = doc[i]
        if char == '"':
            return i + 1
        if char != "\\":
            return _BROKEN  # a raw control character
        if i + 1 == n:
            return _OPEN
        escape = doc[i + 1]
        if escape in _ESCAPES:
            i += 2
        elif escape == "u":
            digits = doc[i + 2 : i + 6]
            if not all(d in _HEX for d in digits):
                return _BROKEN
            if len(digits) < 4:
                return _OPEN
            i += 6
        else:
            return _BROKEN


def _scalar_end(doc: str, start: int) -> int:
    """Index just past the number or literal at ``start``, or ``_OPEN`` / ``_BROKEN``."""
    rest = doc[start : start + len("-Infinity")]
    for literal in _LITERALS:
        if rest.startswith(literal):
            return start + len(literal)
        if literal.startswith(rest) and start + len(rest) == len(doc):
            return _OPEN
    if _NUMBER_CHARS.match(doc, start).end() == len(doc) and _NUMBER_START.fullmatch(doc, start):  # type: ignore[union-attr]
        return _OPEN  # an unfinished number, or one the document may still continue
    number = _NUMBER.match(doc, start)
    return number.end() if number else _BROKEN


def ends_early(doc: str) -> bool:
    """True when ``doc`` is the beginning of a JSON document whose end is missing.

    False for a complete document and for one with an error before its end.
    """
    stack: list[str] = []
    expect = "value"  # value, first-value, key, first-key, colon, comma, done
    i, n = 0, len(doc)
    while True:
        i = _WHITESPACE.match(doc, i).end()  # type: ignore[union-attr]
        if i == n:
            return expect != "done"
        char = doc[i]
        end = _BROKEN
        if expect == "colon":
            if char != ":":
                return False
            expect, i = "value", i + 1
            continue
        if expect == "comma":
            if char == ",":
                expect, i = ("key" if stack[-1] == "{" else "value"), i + 1
                continue
            if char != {"[": "]", "{": "}"}[stack[-1]]:
                return False
            stack.pop()
            end = i + 1
        elif expect in ("key", "first-key"):
            if char == "}" and expect == "first-key":
                stack.pop()
                end = i + 1
            elif char == '"':
                end = _string_end(doc, i)
                if end >= 0:
                    expect, i = "colon", end
                    continue
            else:
                return False
        elif expect in ("value", "first-value"):
            if char in "[{":
                stack.append(char)
                expect, i = ("first-value" if char == "[" else "first-key"), i + 1
                continue
            if char == "]" and expect == "first-value":
                stack.pop()
                end = i + 1
            elif char == '"':
                end = _string_end(doc, i)
            else:
                end = _scalar_end(doc, i)
        else:  # done: something follows a complete document
            return False
        if end == _OPEN:
            return True
        if end == _BROKEN:
            return False
        expect, i = ("comma" if stack else "done"), end


def _sentence(message: str) -> str:
    """json's message without the dangling "at" its position used to follow."""
    for tail in (" starting at", " at"):
        if message.endswith(tail):
            return message[: -len(tail)]
    return message


def describe_json_error(exc: json.JSONDecodeError) -> str:
    """One line: where the JSON broke and why, and whether the document simply ends early."""
    reason = " ".join(_sentence(exc.msg).split())
    text = f"not valid JSON (line {exc.lineno}, column {exc.colno}: {reason})"
    return text + ("; the document ends early (truncated?)" if ends_early(exc.doc) else "")
