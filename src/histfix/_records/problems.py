"""The Problem record the validator returns (no pydantic-ai import, so it can be imported eagerly)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["KEPT_BY_REPAIR", "Problem", "ProblemKind"]

ProblemKind = Literal[
    "dangling_call",
    "shadowed_call",
    "orphan_result",
    "result_before_call",
    "duplicate_result",
    "late_result",
    "consecutive_requests",
    "consecutive_responses",
    "parts_between_results",
    # provider profiles (calls rules):
    "reused_call_id",  # a call id an earlier call already has (same or earlier response)
    "missing_call_id",  # an empty tool_call_id: the wire gives call and result different random ids
    "invalid_call_id",  # an id outside the API's format (Anthropic's pattern, Mistral's 9 characters)
    "invalid_tool_args",  # args that are not a JSON object, which the release's serializer cannot send
    # provider profiles (shape, native rules):
    "starts_with_response",  # the first turn is the model's
    "empty_message",  # a request or response with no parts
    "empty_text",  # empty (or, for Bedrock, whitespace-only) text or prompt
    "results_not_first",  # a part before the tool results of a request
    "unpaired_native_call",  # a native (server) tool call without its result block
    "foreign_signature",  # a thinking signature from a provider the target cannot verify
    # check(provider=):
    "nothing_sendable",  # never reported by check (nothing to send is a conversation not started); kept for callers
    # provider profiles (files rules):
    "unsendable_file",  # a response file the target's model class fails on before sending
    # provider profiles (reasoning rules):
    "unfollowed_reasoning",  # a reasoning item (OpenAI Responses) with no output item after it
    # provider profiles (instructions rules):
    "misplaced_instructions",  # a later system prompt puts the instructions inside a tool exchange
    "misplaced_announcement",  # pydantic-ai's framing announcement would land between calls and their results
    # provider profiles (results_alone rules):
    "results_not_alone",  # tool results and other user content in one turn (Bedrock, non-Claude models)
    # provider profiles (bedrock_thinking rules):
    "unsigned_thinking",  # thinking without a signature, sent where one is required (Bedrock Claude, 1.0.0-1.0.2)
    # provider profiles (call_groups rules):
    "split_calls",  # text or thinking between a response's calls (Responses-compatible servers such as DeepSeek)
]

#: What the default repair keeps by design, as upstream does (a second result for an answered call,
#: a result that does not follow its call's response): only a provider profile fixes these.
KEPT_BY_REPAIR: frozenset[str] = frozenset({"duplicate_result", "late_result"})


@dataclass(frozen=True)
class Problem:
    """One thing in a history that a strict provider rejects, or that repair would change.

    ``message_index``/``part_index`` point into the history that was checked (``part_index`` is
    None for problems about a whole message); ``description`` is one line a person can act on.
    """

    kind: ProblemKind
    message_index: int
    part_index: int | None
    tool_call_id: str | None
    tool_name: str | None
    description: str
    #: the provider APIs (``histfix.PROVIDER_APIS`` names) that reject this; empty when no provider
    #: does and ``repair`` only normalizes it (two requests in a row, say)
    rejected_by: tuple[str, ...] = ()
    #: from ``check(..., provider=...)``: that provider's own error text for this problem
    provider_error: str | None = None

    def __str__(self) -> str:
        where = f"messages[{self.message_index}]" + (
            f".parts[{self.part_index}]" if self.part_index is not None else ""
        )
        return f"{where}: {self.description}"
