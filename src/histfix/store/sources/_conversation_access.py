"""Reaching a pydantic-ai ``ConversationStore``: whether the release has one, the object a
``py:module:attr`` names, and the event loop its async methods run in.

A ``ConversationStore`` is async; histfix's store runs are not. Each run owns one event loop
(:class:`StoreLoop`) and calls every method of the store in it, so a factory's connections and
the reads and writes that use them share a loop.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, Union

from ..._oneline import first_line
from .._source import StoreError

if TYPE_CHECKING:
    from pydantic_ai.conversation_store import ConversationStore

__all__ = [
    "PY_PREFIX",
    "NoConversationStore",
    "StoreLoop",
    "StoreTarget",
    "names_conversation_store",
    "require_conversation_store",
    "resolve_target",
]

#: ``py:module.path:attr`` names a ConversationStore (or a factory of one) to import.
PY_PREFIX = "py:"

T = TypeVar("T")
#: What the API takes for a ConversationStore: the object, a zero-argument factory (sync or async),
#: or a ``py:module.path:attr`` string naming either.
StoreTarget = Union["ConversationStore", Callable[[], Any], str]


class NoConversationStore(StoreError):
    """The installed pydantic-ai has no ``pydantic_ai.conversation_store`` (2.66.0 added it)."""


def names_conversation_store(text: str) -> bool:
    """Whether a source string names a ConversationStore (``py:module:attr``) rather than a store of files or rows."""
    return text.startswith(PY_PREFIX)


def require_conversation_store() -> None:
    """Nothing when the installed release has ``ConversationStore``; else the one line saying it has none."""
    from ..._release import table
    from ..._release.installed import current
    from ..._release.switches import has

    if not has(table.CONVERSATION_STORE):
        raise NoConversationStore(
            f"pydantic-ai-slim {current()[1]} has no ConversationStore "
            f"(pydantic_ai.conversation_store, first in {table.CONVERSATION_STORE.release}): upgrade "
            "pydantic-ai to use one"
        )


class StoreLoop:
    """The one event loop a run calls its ConversationStore in, closed with the run."""

    def __init__(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            # A loop cannot run inside a running one; a thread of its own has none running.
            raise RuntimeError(
                "histfix's ConversationStore runs are synchronous: call them outside a running event "
                "loop, e.g. in `await asyncio.to_thread(...)`, with a factory that makes the store there"
            )
        self._loop = asyncio.new_event_loop()

    def run(self, awaitable: Awaitable[T]) -> T:
        """Run ``awaitable`` to its end in this loop."""
        return self._loop.run_until_complete(awaitable)

    def close(self) -> None:
        try:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        finally:
            self._loop.close()


def _imported(reference: str) -> object:
    """The object ``py:module.path:attr`` names (``attr`` may be dotted), imported as ``python -m`` would."""
    spec = reference.removeprefix(PY_PREFIX)
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise StoreError(f"{reference}: expected py:module.path:attribute (a ConversationStore or a factory)")
    # The command runs where the application lives: its modules import from there, as with `python -m`.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found: object = importlib.import_module(module_name)
    except ImportError as exc:
        raise StoreError(f"{reference}: cannot import {module_name} ({first_line(exc)})") from None
    except Exception as exc:  # the application's module failing as it imports: its own error, in one line
        raise StoreError(f"{reference}: importing {module_name} failed: {first_line(exc)}") from None
    for name in attribute.split("."):
        try:
            found = getattr(found, name)
        except AttributeError:
            raise StoreError(f"{reference}: {module_name} has no attribute {attribute}") from None
    return found


def resolve_target(target: StoreTarget, loop: StoreLoop) -> tuple[Callable[[], ConversationStore], bool]:
    """A function giving the store ``target`` names: the object itself each time, or a new one from
    its factory each call (a factory's result may be awaitable: it is awaited in ``loop``); and
    whether it is a factory (whose stores can then be read side by side, one per reader)."""
    require_conversation_store()
    from pydantic_ai.conversation_store import ConversationStore

    named = str(target) if isinstance(target, str) else None
    found = _imported(target) if isinstance(target, str) else target
    what = named or repr(found)
    if isinstance(found, ConversationStore):
        store = found
        return (lambda: store), False
    if not callable(found):
        raise TypeError(
            f"{what}: is a {type(found).__name__}, not a ConversationStore nor a zero-argument factory of one"
        )
    factory: Callable[[], Any] = found

    def made() -> ConversationStore:
        try:
            result = factory()
            if inspect.isawaitable(result):
                result = loop.run(result)
        except TypeError as exc:
            raise TypeError(f"{what}: calling it with no arguments failed: {first_line(exc)}") from None
        except Exception as exc:
            raise StoreError(f"{what}: making the store failed: {first_line(exc)}") from None
        if not isinstance(result, ConversationStore):
            raise TypeError(
                f"{what}: the factory returned a {type(result).__name__}, not a ConversationStore"
            )
        return result

    return made, True
