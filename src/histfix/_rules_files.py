"""Profile rules about files in the model's responses (issue 10): what a model class cannot send.

A ``FilePart`` is a file the model produced (an image, say). From its arrival (after 1.0.7) to
1.79.0, BedrockConverseModel asserts that every response part it does not map is a tool call, so a
response file fails the whole request with ``AssertionError`` before anything is sent; from 1.80.0
it leaves response files out itself (``_compat.BEDROCK_SKIPS_RESPONSE_FILES_SINCE``). The pass
runs only where the release fails, so ``provider="any"`` keeps the files wherever Bedrock would
merely skip them. An after-stage pass, pure, returning the list it was given and no changes when
nothing applies; a dropped file is reported with what it held (media type and size, not its bytes).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._changes import Change
from ._problems import Problem
from ._providers import ProviderTarget
from ._rules_shape import preview

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from ._profiles import ProfileRule

__all__ = ["RESPONSE_FILES_APIS", "detect_response_files_sendable", "file_rules", "response_files_sendable"]

#: The APIs whose model class fails on a response file on some releases (Bedrock, up to 1.79.0).
RESPONSE_FILES_APIS = frozenset({"bedrock"})


def _failing_file_part() -> type | None:
    """``FilePart`` where the installed BedrockConverseModel fails on it (None: absent, or skipped)."""
    from pydantic_ai import messages

    from . import _compat

    found = getattr(messages, "FilePart", None)
    if not isinstance(found, type) or _compat.bedrock_skips_response_files():
        return None
    return found


def _files_at(history: Sequence[ModelMessage], file_part: type) -> list[int]:
    """The indices of responses holding a file (one set of part classes first: the cheap early exit)."""
    classes = set(map(type, itertools.chain.from_iterable([message.parts for message in history])))
    if not any(issubclass(kind, file_part) for kind in classes):
        return []
    return [
        index
        for index, message in enumerate(history)
        if message.kind == "response" and any(isinstance(part, file_part) for part in message.parts)
    ]


def _describe(part: Any) -> str:
    """A file part as a person can judge it: its media type and size (the bytes are not useful)."""
    content = getattr(part, "content", None)
    data = getattr(content, "data", None)
    size = f", {len(data)} bytes" if isinstance(data, bytes | bytearray) else ""
    return f"file: {getattr(content, 'media_type', type(content).__name__)}{size}"


def response_files_sendable(
    history: list[ModelMessage], target: ProviderTarget
) -> tuple[list[ModelMessage], list[Change]]:
    """Bedrock, up to 1.79.0: BedrockConverseModel asserts on a response ``FilePart`` before sending
    (1.80.0+ leaves it out, as this does): drop response files, each reported with what it held. A
    response left empty is no_empty_content's (after this)."""
    file_part = _failing_file_part() if RESPONSE_FILES_APIS & set(target.apis) else None
    if file_part is None:
        return history, []
    found = _files_at(history, file_part)
    if not found:
        return history, []
    fixed = list(history)
    changes = []
    for index in found:
        message = history[index]
        files = [part for part in message.parts if isinstance(part, file_part)]
        kept = [part for part in message.parts if not isinstance(part, file_part)]
        fixed[index] = dataclasses.replace(message, parts=kept)  # type: ignore[arg-type]
        changes.append(
            Change(
                "dropped_file",
                index,
                f"dropped {len(files)} file part(s) from the response at messages[{index}]: this release's "
                f"BedrockConverseModel cannot send a file in a response (it fails before sending; 1.80.0+ "
                f"leaves them out), for {target.name}",
                preview=preview("; ".join(_describe(part) for part in files)),
            )
        )
    return fixed, changes


def detect_response_files_sendable(history: Sequence[ModelMessage], target: ProviderTarget) -> list[Problem]:
    """Each response file the installed BedrockConverseModel fails on (no provider wording: the
    request never leaves the process)."""
    file_part = _failing_file_part() if RESPONSE_FILES_APIS & set(target.apis) else None
    if file_part is None:
        return []
    problems = []
    for index in _files_at(history, file_part):
        for part_index, part in enumerate(history[index].parts):
            if isinstance(part, file_part):
                problems.append(
                    Problem(
                        "unsendable_file",
                        index,
                        part_index,
                        None,
                        None,
                        "a file in the model's response: this release's BedrockConverseModel raises "
                        "AssertionError on it before sending (1.80.0+ leaves it out)",
                        ("bedrock",),
                        None,
                    )
                )
    return problems


def file_rules() -> tuple[ProfileRule, ...]:
    """This module's rules in pass order (before no_empty_content, which drops a response it empties)."""
    from ._profiles import ProfileRule

    return (
        ProfileRule(
            "response_files_sendable",
            RESPONSE_FILES_APIS,
            "BedrockConverseModel asserts on a FilePart in a response before sending, up to 1.79.0 "
            "(models/bedrock.py; measured on 1.67.0); 1.80.0+ leaves it out",
            "after",
            response_files_sendable,
            detect_response_files_sendable,
            {},
        ),
    )
