"""Profile rules about files in the model's responses: what a model class cannot send.

A ``FilePart`` is a file the model produced (an image, say). From its arrival until
``table.BEDROCK_SKIPS_RESPONSE_FILES``, BedrockConverseModel asserts that every response part it does
not map is a tool call, so a response file fails the whole request with ``AssertionError`` before
anything is sent; from that release it leaves response files out itself. That pass runs only where
the release fails, so ``provider="any"`` keeps the files wherever Bedrock would
merely skip them. OpenAI Chat and Mistral never send a response file (every release that has
``FilePart``): a response of nothing but files goes out as an empty assistant message (OpenAI Chat
content_or_tool_calls) or not at all, which can leave a request with no message (Mistral
request_schema); the second pass drops the files of such a response (no_empty_content drops the
response left empty). Pure passes, each returning the list it was given and no changes when nothing
applies; a dropped file is reported with what it held (media type and size, not its bytes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..._records.parts import native_kind
from ..._release import table
from ..._release.switches import has
from ..rule import Finding, ProfileRule, preview, problem, rule
from ..scan import Scan
from ..targets import ProviderTarget

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "FILES_NEVER_SENT_APIS",
    "RESPONSE_FILES_APIS",
    "RULES",
    "detect_response_files_sendable",
    "files_only_responses_sent",
    "response_files_sendable",
]

#: The APIs whose model class fails on a response file on some releases (Bedrock, before
#: ``table.BEDROCK_SKIPS_RESPONSE_FILES``).
RESPONSE_FILES_APIS = frozenset({"bedrock"})
_SKIPS = table.BEDROCK_SKIPS_RESPONSE_FILES
#: The APIs whose model class never sends a response file (a response of only files goes out empty).
FILES_NEVER_SENT_APIS = frozenset({"openai-chat", "mistral"})


def _failing_file_part() -> type | None:
    """``FilePart`` where the installed BedrockConverseModel fails on it (None: absent, or skipped)."""

    found = _file_part()
    return None if found is None or has(table.BEDROCK_SKIPS_RESPONSE_FILES) else found


def _file_part() -> type | None:
    from pydantic_ai import messages

    found = getattr(messages, "FilePart", None)
    return found if isinstance(found, type) else None


def _files_at(
    history: Sequence[ModelMessage], file_part: type, scan: Scan, *, only: bool = False
) -> list[int]:
    """The indices of responses holding a file (``only``: nothing but files and native tool parts),
    after the survey's part classes (the cheap early exit)."""

    if not scan.survey(history).classes(file_part):
        return []
    return [
        index
        for index, message in enumerate(history)
        if message.kind == "response"
        and any(isinstance(part, file_part) for part in message.parts)
        and (not only or all(isinstance(part, file_part) or native_kind(part) for part in message.parts))
    ]


def _describe(part: Any) -> str:
    """A file part as a person can judge it: its media type and size (the bytes are not useful)."""
    content = getattr(part, "content", None)
    data = getattr(content, "data", None)
    size = f", {len(data)} bytes" if isinstance(data, bytes | bytearray) else ""
    return f"file: {getattr(content, 'media_type', type(content).__name__)}{size}"


def response_files_sendable(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Bedrock, before ``table.BEDROCK_SKIPS_RESPONSE_FILES``: BedrockConverseModel asserts on a response
    ``FilePart`` before sending (that release leaves it out, as this does): drop response files, each
    reported with what it held. A response left empty is no_empty_content's."""
    file_part = _failing_file_part()
    if file_part is None:
        return history, []
    why = (
        "this release's BedrockConverseModel cannot send a file in a response (it fails before sending; "
        f"{_SKIPS.release}+ leaves them out)"
    )
    return _dropped_files(history, _files_at(history, file_part, scan), file_part, why, target)


def _dropped_files(
    history: list[ModelMessage], found: list[int], file_part: type, why: str, target: ProviderTarget
) -> tuple[list[ModelMessage], list[Change]]:
    """``history`` without the file parts of the responses at ``found``, each drop reported."""
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
                f"dropped {len(files)} file part(s) from the response at messages[{index}]: {why}, for {target.name}",
                preview=preview("; ".join(_describe(part) for part in files)),
            )
        )
    return fixed, changes


def files_only_responses_sent(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """OpenAI Chat content_or_tool_calls / request_schema: OpenAIChatModel and MistralModel never send
    a response file, so a response of only files goes out empty or not at all: its files are
    dropped (reported; the wire loses nothing) and no_empty_content drops the response (native tool
    parts beside them are responses_send_something's)."""
    file_part = _file_part()
    if file_part is None:
        return history, []
    why = "the target's model class never sends a file in a response (it would go out empty)"
    return _dropped_files(history, _files_at(history, file_part, scan, only=True), file_part, why, target)


def detect_response_files_sendable(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    """Each response file the installed BedrockConverseModel fails on (no provider wording: the
    request never leaves the process)."""
    file_part = _failing_file_part()
    if file_part is None:
        return []
    problems: list[Finding] = []
    for index in _files_at(history, file_part, scan):
        for part_index, part in enumerate(history[index].parts):
            if isinstance(part, file_part):
                problems.append(
                    problem(
                        "unsendable_file",
                        {},
                        target,
                        at=index,
                        part_index=part_index,
                        apis=RESPONSE_FILES_APIS,
                        description="a file in the model's response: this release's BedrockConverseModel "
                        f"raises AssertionError on it before sending ({_SKIPS.release}+ leaves it out)",
                    )
                )
    return problems


#: This module's rules (their place in the pass order is the registry's).
RULES: tuple[ProfileRule, ...] = (
    rule(
        "response_files_sendable",
        "after",
        response_files_sendable,
        detect_response_files_sendable,
        {},
        apis=RESPONSE_FILES_APIS,
        why=f"a FilePart in a response: BedrockConverseModel before {_SKIPS.release} asserts before "
        "sending (its models/bedrock.py)",
    ),
    rule(
        "files_only_responses_sent",
        "after",
        files_only_responses_sent,
        None,
        {},
        apis=FILES_NEVER_SENT_APIS,
        why="a response of only files: OpenAIChatModel and MistralModel never send response files,"
        " so it goes out empty (vercel/ai#13744) or not at all, leaving no messages "
        "(CopilotKit#529)",
    ),
)
