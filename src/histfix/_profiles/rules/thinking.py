"""Thinking a provider cannot verify: a signature another provider made, and, for Claude on Bedrock,
thinking without a signature.

A thinking signature is verified only by the provider that made it: Anthropic refuses another's
(``Invalid signature in thinking block``, anthropic-sdk-python#1598), and OpenAI Responses replays a
signature as a reasoning item's encrypted content, which only OpenAI can decrypt.
``thinking_transfers`` drops such a signature and keeps the thinking text.

Claude on Bedrock refuses a reasoning block without a signature (``messages.N.content.M.thinking.
signature: Field required``: earendil-works/pi#2063, run-llama/llama_index#20851) and one whose
signature came from another provider (``messages.N.content.M: Invalid signature in thinking block``:
chenhg5/cc-connect#897). Before ``table.BEDROCK_SENDS_ONLY_OWN_THINKING`` BedrockConverseModel sends
*every* ``ThinkingPart`` to a Claude model as a reasoning block, signed or not, whatever made it; from
that release it sends only Bedrock's own signed thinking that way and the rest as tagged text. So on
the releases before it (:data:`EVERY_THINKING_SENT`) ``bedrock_thinking_signed`` drops the thinking
parts that would be refused, each reported with its text. It drops rather than turning them into text: a stored history is also what
an application shows, and reasoning stored as a ``TextPart`` would read as the model's answer (1.0.x's
AnthropicModel likewise leaves unsigned thinking out). Signatures made by Anthropic count as Claude's
own on Bedrock, as pydantic-ai 2.68 treats them (``BedrockConverseModel.canonical_system``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..._records.changes import Change
from ..._release import table
from ..._release.switches import has
from ..rule import Finding, ProfileRule, preview, problem, rule
from ..scan import Scan
from ..targets import ProviderTarget, bedrock_claude
from ..wording import said

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse

__all__ = [
    "BEDROCK_THINKING_APIS",
    "BEDROCK_THINKING_WORDING",
    "EVERY_THINKING_SENT",
    "RULES",
    "THINKING_APIS",
    "THINKING_WORDING",
    "bedrock_thinking_signed",
    "detect_bedrock_thinking_signed",
    "detect_thinking_transfers",
    "thinking_origin",
    "thinking_transfers",
]

#: Only Anthropic words its refusal; OpenAI Responses replays a signature as a reasoning item's
#: encrypted content, which only OpenAI can decrypt, and its refusal has no documented wording.
THINKING_WORDING = said({"anthropic": "thinking_signature"})

#: The provider names (``provider_name`` prefixes) whose signatures each API can verify.
_OWN_PROVIDERS = {"anthropic": ("anthropic",), "openai-responses": ("openai",)}

THINKING_APIS = frozenset(_OWN_PROVIDERS)


def thinking_origin(part: object, response: ModelResponse) -> str | None:
    """Which provider produced a thinking part: its own ``provider_name`` (1.x.y+), else its response's."""
    return getattr(part, "provider_name", None) or response.provider_name


def _foreign(part: object, response: ModelResponse, target: ProviderTarget, thinking: type) -> bool:
    """A signed thinking part that the target's APIs cannot verify (another provider made it)."""
    if not isinstance(part, thinking) or not getattr(part, "signature", None):
        return False
    origin = thinking_origin(part, response)
    if origin is None:
        return False  # unknown origin: the signature may well be the target's own
    return any(not origin.startswith(_OWN_PROVIDERS[api]) for api in _verifying(target))


def _verifying(target: ProviderTarget) -> list[str]:
    """The target's APIs that are sent thinking signatures on the installed release: Anthropic's on
    every release, OpenAI Responses' where the release has ``table.THINKING_SENT`` (the releases
    before leave thinking out of its input, so there its signatures need not go)."""

    apis = [api for api in target.apis if api in _OWN_PROVIDERS]
    return apis if has(table.THINKING_SENT) else [api for api in apis if api != "openai-responses"]


def thinking_transfers(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Anthropic `Invalid signature in thinking block` (anthropic-sdk-python#1598) and OpenAI
    Responses reasoning items (the signature is replayed as encrypted content): a signature only its
    own provider can verify.
    The thinking text stays (every release sends unsigned thinking as text or drops it from the wire
    only); the foreign signature goes, and is reported."""
    from pydantic_ai.messages import ModelResponse, ThinkingPart

    if not scan.survey(history).classes(ThinkingPart):
        return history, []  # the cheap early exit: no thinking at all
    fixed: list[ModelMessage] | None = None
    changes: list[Change] = []
    for index, message in enumerate(history):
        if not isinstance(message, ModelResponse):
            continue
        if not any(_foreign(part, message, target, ThinkingPart) for part in message.parts):
            continue
        parts: list[Any] = []
        given: list[Any] = list(message.parts)
        for part in given:
            if _foreign(part, message, target, ThinkingPart):
                changes.append(
                    Change(
                        "dropped_signature",
                        index,
                        f"dropped the thinking signature from {thinking_origin(part, message)}: the target cannot "
                        "verify it (the thinking text is kept)",
                        preview=preview(part.signature),
                    )
                )
                part = dataclasses.replace(part, signature=None)  # noqa: PLW2901
            parts.append(part)
        if fixed is None:
            fixed = list(history)
        fixed[index] = dataclasses.replace(message, parts=parts)
    return (history, []) if fixed is None else (fixed, changes)


def detect_thinking_transfers(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    from pydantic_ai.messages import ModelResponse, ThinkingPart

    if not scan.survey(history).classes(ThinkingPart):
        return []  # the cheap early exit, as the pass's
    return [
        problem(
            "foreign_signature",
            THINKING_WORDING,
            target,
            at=index,
            apis=THINKING_APIS,
            description=f"a thinking part signed by {thinking_origin(part, message)}, which the target cannot verify",
            n=index,
            m=at,
            id=getattr(part, "id", None),
        )
        for index, message in enumerate(history)
        if isinstance(message, ModelResponse)
        for at, part in enumerate(message.parts)
        if _foreign(part, message, target, ThinkingPart)
    ]


# --- bedrock_thinking_signed ------------------------------------------------------------------------


BEDROCK_THINKING_APIS = frozenset({"bedrock"})

BEDROCK_THINKING_WORDING = said({"bedrock": "thinking_unsigned"})

_FOREIGN_WORDING = said({"bedrock": "thinking_signature"})

#: The releases whose BedrockConverseModel sends Claude every thinking part as a reasoning block.
EVERY_THINKING_SENT = table.span(table.OLDEST, table.BEDROCK_SENDS_ONLY_OWN_THINKING.release)
#: ``provider_name`` prefixes whose signatures Claude on Bedrock verifies.
_OWN = ("bedrock", "anthropic")


def _applies(target: ProviderTarget) -> bool:
    """The release sends every thinking part to Claude, and the model may be Claude
    (BedrockConverseModel sends thinking only to Claude; no model named: it may be)."""

    if has(table.BEDROCK_SENDS_ONLY_OWN_THINKING):
        return False
    named = [name for api, name in target.models if api == "bedrock"]
    return not named or any(map(bedrock_claude, named))


def _refused(part: Any, response: Any, thinking: type) -> str | None:
    """Why Claude on Bedrock refuses this part as :data:`EVERY_THINKING_SENT` send it (None: a thinking part it takes,
    or no thinking part). A signature of unknown origin may be Bedrock's own: it stays."""
    if not isinstance(part, thinking):
        return None
    if not getattr(part, "signature", None):
        return "unsigned"
    origin = thinking_origin(part, response)
    if origin is not None and not origin.startswith(_OWN):
        return f"signed by {origin}"
    return None


def _refused_at(history: Sequence[ModelMessage], scan: Scan) -> list[int]:
    """The indices of responses holding a thinking part Claude on Bedrock refuses (the survey's
    part classes are the cheap early exit)."""
    from pydantic_ai.messages import ModelResponse, ThinkingPart

    if not scan.survey(history).classes(ThinkingPart):
        return []
    return [
        index
        for index, message in enumerate(history)
        if isinstance(message, ModelResponse)
        and any(_refused(part, message, ThinkingPart) for part in message.parts)
    ]


def bedrock_thinking_signed(
    history: list[ModelMessage], target: ProviderTarget, scan: Scan
) -> tuple[list[ModelMessage], list[Change]]:
    """Bedrock (Claude), :data:`EVERY_THINKING_SENT`: drop the thinking parts sent unsigned or with another
    provider's signature, each reported with its text."""
    found = _refused_at(history, scan) if _applies(target) else []
    if not found:
        return history, []
    from pydantic_ai.messages import ThinkingPart

    fixed = list(history)
    changes = []
    for index in found:
        message = history[index]
        kept: list[Any] = []
        given: list[Any] = list(message.parts)
        for part in given:
            why = _refused(part, message, ThinkingPart)
            if why is None:
                kept.append(part)
                continue
            changes.append(
                Change(
                    "dropped_thinking",
                    index,
                    f"dropped a thinking part ({why}) from the response at messages[{index}]: this release's "
                    f"BedrockConverseModel sends it to Claude as a reasoning block, which only Bedrock's or "
                    f"Anthropic's own signature makes acceptable, for {target.name}",
                    preview=preview(part.content),
                )
            )
        fixed[index] = dataclasses.replace(message, parts=kept)  # type: ignore[arg-type]
    return fixed, changes


def detect_bedrock_thinking_signed(
    history: Sequence[ModelMessage], target: ProviderTarget, scan: Scan
) -> list[Finding]:
    """Each thinking part Claude on Bedrock refuses as this release sends it."""
    if not _applies(target):
        return []
    from pydantic_ai.messages import ThinkingPart

    found = []
    for index in _refused_at(history, scan):
        message = history[index]
        for at, part in enumerate(message.parts):
            why = _refused(part, message, ThinkingPart)
            if why is None:
                continue
            unsigned = why == "unsigned"
            found.append(
                problem(
                    "unsigned_thinking" if unsigned else "foreign_signature",
                    BEDROCK_THINKING_WORDING if unsigned else _FOREIGN_WORDING,
                    target,
                    at=index,
                    description=f"a thinking part {why}, which this release's BedrockConverseModel sends to "
                    "Claude as a reasoning block (only Bedrock's or Anthropic's own signature is accepted)",
                    n=index,
                    m=at,
                )
            )
    return found


#: This module's rules (their place in the pass order is the registry's).
RULES: tuple[ProfileRule, ...] = (
    rule(
        "thinking_transfers",
        "after",
        thinking_transfers,
        detect_thinking_transfers,
        THINKING_WORDING,
        apis=THINKING_APIS,
        why="a thinking signature from another provider: Anthropic (anthropic-sdk-python#1598); "
        "OpenAI Responses decrypts only its own reasoning items",
    ),
    rule(
        "bedrock_thinking_signed",
        "after",
        bedrock_thinking_signed,
        detect_bedrock_thinking_signed,
        BEDROCK_THINKING_WORDING,
        why="Claude on Bedrock: unsigned thinking (earendil-works/pi#2063) or another provider's "
        f"signature (anthropic-sdk-python#1598), which BedrockConverseModel {EVERY_THINKING_SENT} send "
        "(its models/bedrock.py)",
    ),
)
