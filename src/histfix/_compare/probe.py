"""One release's side of ``histfix compare``: run inside that release's environment.

``python -m histfix._compare.probe [--prompt TEXT] < history.json`` prints, as JSON, what the
installed pydantic-ai does with the stored history (its own ``ModelMessagesTypeAdapter``, then a
plain ``Agent`` whose model is a capturing ``FunctionModel``: no provider, no network) and what
``histfix.repair`` returns (loaded with ``histfix.load_json``). Both sides are judged by the same
strict provider (:mod:`histfix._check.strict`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from typing import Any

from .._oneline import first_line

__all__ = ["CONTINUE", "PLAIN", "REPAIRED", "PlainAgent", "probe", "prompt_for", "prompt_for_loaded"]

PLAIN, REPAIRED = "plain", "histfix"
#: The neutral prompt a finished conversation is continued with when no ``--prompt`` is given:
#: without a prompt pydantic-ai ends such a run without a model request, so there is nothing to show.
CONTINUE = "Continue."

Json = dict[str, Any]
Outcome = tuple[list[Any] | None, str | None]  # (the messages, or None; what was raised, or None)


def prompt_for(history: object, prompt: str | None) -> str | None:
    """The prompt the run takes: ``prompt`` when given; else :data:`CONTINUE` for a finished
    conversation (it ends on a response that calls no tool, so only a new prompt sends anything),
    and None otherwise (a pending request or open calls: the run continues them by itself).
    ``history`` is the stored JSON, parsed; the same answer on every release."""
    if prompt is not None or not isinstance(history, list) or not history:
        return prompt
    last = history[-1]
    if not isinstance(last, dict) or last.get("kind") != "response":
        return None
    parts = last.get("parts") or []
    return _after_response(part.get("part_kind") for part in parts if isinstance(part, dict))


def prompt_for_loaded(messages: list[Any]) -> str | None:
    """:func:`prompt_for` without a prompt given, read from the messages a release loaded of the
    stored JSON instead of the JSON itself: the same answer, as a loaded message and its parts
    keep the ``kind`` and ``part_kind`` they were stored with (a release translates request
    parts only)."""
    if not messages or getattr(messages[-1], "kind", None) != "response":
        return None
    return _after_response(part.part_kind for part in messages[-1].parts)


def _after_response(part_kinds: Iterable[object]) -> str | None:
    """The prompt for a history ending on a response with parts of these kinds: none while it
    calls a tool (the run answers the calls), else :data:`CONTINUE`."""
    return None if "tool-call" in part_kinds else CONTINUE


def _side(load: Callable[[], list[Any]], run: Callable[[list[Any]], Outcome]) -> Json:
    """Load, run, and judge what came out."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from .._check.strict import strict_provider_errors

    try:
        history = load()
    except ValueError as exc:  # pydantic's ValidationError is a ValueError too
        return {
            "raised": f"cannot load the history: {first_line(str(exc))}",
            "messages": None,
            "problems": [],
        }
    messages, raised = run(history)
    if messages is None:
        return {"raised": raised, "messages": None, "problems": []}
    dumped = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    return {"raised": raised, "messages": dumped, "problems": strict_provider_errors(messages)}


def _repair(history: list[Any]) -> Outcome:
    from .. import repair

    try:
        return repair(history), None
    except Exception as exc:  # what repair raises is an outcome to show, not a crash
        return None, f"{type(exc).__name__}: {exc}"


class _Captured(Exception):
    """Raised by the capturing model once it holds the first request: what the run would do
    after it (take the captured answer and end) cannot change what was sent."""


def _only_captured(exc: BaseException) -> bool:
    """Whether ``exc`` is the capture's own stop (a task group may wrap it in a group)."""
    if isinstance(exc, _Captured):
        return True
    inner = getattr(exc, "exceptions", None)  # an exception group (no builtin name before 3.11)
    return isinstance(inner, tuple) and bool(inner) and all(_only_captured(one) for one in inner)


class PlainAgent:
    """A plain ``Agent`` whose model (a capturing ``FunctionModel``: no provider, no network) keeps
    the first request it is sent, and stops the run there. Built once and reused: building one
    costs about what a run does. The model's function is a coroutine, so the run calls it in
    its own loop (a plain function would be handed to a worker thread on every request)."""

    def __init__(self) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelMessage, ModelResponse
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        self._sent: list[list[ModelMessage]] = []

        async def capture(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            self._sent.append(list(messages))
            raise _Captured

        self._agent = Agent(FunctionModel(capture))

    def send(self, history: list[Any], prompt: str | None) -> Outcome:
        """What the run sends on its first model request, and what it raises before that."""
        self._sent.clear()
        try:
            self._agent.run_sync(prompt, message_history=history)
        except BaseException as exc:  # e.g. UserError for unanswered calls plus a new prompt
            if self._sent and _only_captured(exc):
                return self._sent[0], None
            if not isinstance(exc, Exception):
                raise
            return (self._sent[0] if self._sent else None), f"{type(exc).__name__}: {exc}"
        if not self._sent:  # the run ended without asking the model (a finished conversation, no prompt)
            return None, "the run ended without a model request: nothing was sent"
        return self._sent[0], None


def probe(raw: bytes, prompt: str | None) -> Json:
    """What the installed release does with the stored history ``raw``, as plain JSON data."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from .. import backend_info, load_json

    info = backend_info()
    return {
        "release": info.version,
        "backend": info.backend,
        PLAIN: _side(
            lambda: ModelMessagesTypeAdapter.validate_json(raw), lambda h: PlainAgent().send(h, prompt)
        ),
        REPAIRED: _side(lambda: load_json(raw), _repair),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m histfix._compare.probe")
    parser.add_argument("--prompt", default=None)
    args = parser.parse_args(argv)
    json.dump(probe(sys.stdin.buffer.read(), args.prompt), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
