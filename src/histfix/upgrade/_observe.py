"""What the installed release does with one stored history: one side of the upgrade check.

:meth:`Observer.observe` says whether pydantic-ai's own loader and ``histfix.load_json`` load the
history, what the default ``histfix.repair`` changes, what a plain ``Agent`` sends and what the
repair returns, each judged by the strict provider exactly as ``histfix compare`` judges them
(and, with a provider, what histfix's profile of it rejects in what is sent). It runs in every
release's environment (the probe) and needs only pydantic-ai and histfix.

Each history is validated once: ``load_json`` takes the loader's messages when it would not
convert anything, and the repair is skipped when ``check`` finds nothing (its contract: check
finds everything repair changes). A plain ``Agent`` run costs ten times a validation, so it is
skipped where what it sends is known: a history repair leaves alone, whose requests and responses
alternate and which ends on a final answer, is sent as it is plus the new prompt (the probe tests
prove this on every release they build an environment for, against the ``Agent`` itself). Not so
where the release's run repairs by a dict (``switches.run_adds_surplus_results``) and a response
calls one id twice: each of its repair passes adds a surplus result, so the ``Agent`` runs there.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._oneline import first_line
from ._errors import loader_error

if TYPE_CHECKING:
    from ._fields import TripProof

__all__ = ["FIELDS", "FromA", "Observation", "Observed", "Observer", "parse"]

Observation = dict[str, Any]
#: An observation's fields, in the order the record shows them. Observed against the checking
#: release (:class:`FromA`), it adds ``loads_other_repair`` (when A's repair changed the history),
#: ``repair_differs`` and ``upstream_repair_differs``.
FIELDS = (
    "loads",
    "load_json",
    "changes",
    "repair_raises",
    "sends",
    "returns",
    "sent_problems",
    "provider_rejects",
)


@dataclass(frozen=True)
class FromA:
    """What the checking release (A) made of a history, for another release (B) to compare."""

    #: ``histfix.dump_json`` of A's default repair output, when it changed the history
    repaired: bytes | None = None
    #: A's own ``repair_messages`` output, when A has it and it differs from ``repaired``
    upstream: bytes | None = None
    #: the parts A's loader turned into another kind (see _fields.translated_parts)
    translated: Mapping[str, Any] | None = None


@dataclass
class Observed:
    """One history on the installed release."""

    found: Observation
    #: A's side (``want_repaired``): FromA's ``repaired`` and ``upstream``, and the translated parts
    repaired: bytes | None = None
    upstream: bytes | None = None
    translated: dict[str, Any] | None = None
    #: B's side, with a TripProof: the round trip's result where the proof names what it loses,
    #: else this release's own dump of the history for the real trip (None: its loader refused it)
    trip: dict[str, Any] | bytes | None = None


def parse(history: bytes) -> Any:
    """The stored JSON as ``json.loads`` reads it, by pydantic-core's parser where that reads it
    (about a third cheaper, and it gives the same values of the same types), else by ``json.loads``
    itself: it reads what pydantic-core refuses (a lone surrogate, a byte-order mark, nesting past
    200) and raises what it raises otherwise."""
    import pydantic_core

    from_json = getattr(pydantic_core, "from_json", None)
    if from_json is not None:
        try:
            return from_json(history)
        except ValueError:
            pass
    return json.loads(history)


def _cannot_load(error: Exception | None) -> str:
    """``histfix compare``'s words for a loader's refusal (anything but a ValueError is no
    refusal but a failure of the probe: raised again)."""
    if not isinstance(error, ValueError):
        raise error or ValueError("no messages")
    return f"cannot load the history: {first_line(str(error))}"


@dataclass
class _Steps:
    """One history through the loaders and the repair, each failure kept for its verdict."""

    history: bytes = b""
    loaded: list[Any] | None = None
    plain_error: Exception | None = None
    messages: list[Any] | None = None
    load_error: Exception | None = None
    repaired: list[Any] | None = None
    repair_error: Exception | None = None
    #: the stored JSON parsed, and what parsing raised: read on first use (:meth:`stored`)
    _parse: tuple[Any, Exception | None] | None = None

    def stored(self) -> tuple[Any, Exception | None]:
        """The stored JSON as :func:`parse` reads it (None when it cannot), and what it raised.
        Parsed on first use: a history the loader loaded and nothing compares field by field
        needs only its loaded messages."""
        if self._parse is None:
            try:
                self._parse = (parse(self.history), None)
            except Exception as exc:  # the loaders say it their way; the verdicts report this
                self._parse = (None, exc)
        return self._parse

    @classmethod
    def load(cls, history: bytes, found: Observation) -> _Steps:
        """Load it with pydantic-ai's loader and with ``histfix.load_json``: the loader's
        messages when load_json would not convert anything (it would read the same text with
        the same loader, to the same messages)."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        import histfix

        from .._portable import _may_need_conversion

        steps = cls(history)
        try:
            steps.loaded = ModelMessagesTypeAdapter.validate_json(history)
        except Exception as exc:  # ValidationError, or whatever an old release raises on odd input
            found["loads"] = loader_error(exc)
            steps.plain_error = exc
        if steps.loaded is not None and not _may_need_conversion(history):
            steps.messages = steps.loaded
        else:
            try:
                steps.messages = histfix.load_json(history)
            except Exception as exc:
                found["load_json"] = loader_error(exc)
                steps.load_error = exc
        return steps

    def repair(self, found: Observation, want_repaired: bool) -> bytes | None:
        """The default repair of what load_json loaded (skipped when check finds nothing: it
        changes nothing then); its output, when asked for and it changes something."""
        import histfix

        from .._check.history import check_history

        if self.messages is None:
            return None
        if not check_history(self.messages):
            found["changes"], self.repaired = {}, self.messages
            return None
        try:
            report = histfix.repair_report(self.messages)
        except Exception as exc:  # what repair raises is a finding, not a crash
            found["repair_raises"] = f"{type(exc).__name__}: {loader_error(exc)}"
            self.repair_error = exc
            return None
        found["changes"] = dict(Counter(change.kind for change in report.changes))
        self.repaired = report.messages
        return histfix.dump_json(report.messages) if report.changes and want_repaired else None


def _upstream_repair() -> Any:
    """pydantic-ai's own ``repair_messages`` (2.53.0+), or None."""
    from pydantic_ai import messages

    return getattr(messages, "repair_messages", None)


def _read(data: bytes) -> list[Any] | None:
    """Another release's output as a histfix user reads it here (``load_json``); None if it cannot."""
    import histfix

    try:
        return histfix.load_json(data)
    except Exception:  # reported already, as loads_other_repair, where it matters
        return None


def _differs(a: list[Any] | None, b: list[Any] | None) -> dict[str, Any] | None:
    """Where ``b`` (this release's) differs from ``a`` (the other's, loaded here), sorted by what
    it means (:mod:`._meaning`); None when they agree or either is missing."""
    if a is None or b is None or a is b or a == b:
        return None
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from ._meaning import changes, sort

    found = changes(
        ModelMessagesTypeAdapter.dump_python(a, mode="json"),
        ModelMessagesTypeAdapter.dump_python(b, mode="json"),
    )
    differs = sort(found, "changed")
    return differs if differs["changed"] or differs["bookkeeping"] else None


def _calls_an_id_twice(messages: list[Any]) -> bool:
    """Whether some response has two tool calls with one id."""
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    for message in messages:
        if isinstance(message, ModelResponse):
            ids = [part.tool_call_id for part in message.parts if isinstance(part, ToolCallPart)]
            if len(set(ids)) != len(ids):
                return True
    return False


def _alternates(messages: list[Any]) -> bool:
    from pydantic_ai.messages import ModelRequest, ModelResponse

    kinds = (ModelRequest, ModelResponse)
    return all(isinstance(message, kinds[index % 2]) for index, message in enumerate(messages))


class Observer:
    """Observes histories on the installed release, for one run (``provider``: ``--provider``;
    ``upstream_on_a``: the checking release has ``repair_messages`` of its own to compare)."""

    def __init__(self, provider: str | None = None, *, upstream_on_a: bool = False) -> None:
        import histfix

        from .._release.switches import run_adds_surplus_results

        self.provider = provider
        self.upstream_on_a = upstream_on_a
        self._agent: Any = None
        #: the release's run adds results to an id called twice in one response: no fast path there
        self._surplus_results = run_adds_surplus_results()
        self._upstream_repair = _upstream_repair()
        #: the default repair delegates to repair_messages here: its output is upstream's
        self._delegates = histfix.backend_info().backend == "upstream"

    def observe(
        self,
        history: bytes,
        *,
        want_repaired: bool = False,
        translations: bool = False,
        against: FromA | None = None,
        proof: TripProof | None = None,
    ) -> Observed:
        """What the installed release does with ``history`` (a JSON list, as bytes). Never raises
        for a bad history: every failure is part of the observation.

        ``want_repaired`` (the checking release, A): also what its repairs write and, with
        ``translations``, which parts its loader translated, for the others. ``against`` (another release, B): what A made of
        the history, which this release loads and compares with its own repairs; ``proof``: the
        round trip A -> here -> A, named where it can be proven (:attr:`Observed.trip`).
        """
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        from ._fields import translated_parts
        from ._trip import trip_result

        found: Observation = {"loads": None, "load_json": None, "changes": None, "repair_raises": None}
        steps = _Steps.load(history, found)
        observed = Observed(found)
        if steps.loaded is not None:  # before the Agent runs: it is handed these very messages
            if proof is not None:
                translated = None if against is None else against.translated
                lost = proof.losses(steps.stored()[0], steps.loaded, translated)
                observed.trip = (
                    ModelMessagesTypeAdapter.dump_json(steps.loaded) if lost is None else trip_result(lost)
                )
            if translations:
                observed.translated = translated_parts(steps.stored()[0], steps.loaded)
        observed.repaired = steps.repair(found, want_repaired)
        if want_repaired:
            observed.upstream = self._upstream_output(steps)
        if against is not None:
            self._compare(found, steps, against)
        try:
            found |= self._verdicts(steps)
        except Exception as exc:
            found |= {"sends": f"the probe failed: {type(exc).__name__}: {loader_error(exc)}"}
            found |= {"returns": None, "sent_problems": [], "provider_rejects": None}
        return observed

    def _upstream_of(self, steps: _Steps) -> list[Any] | None:
        """What pydantic-ai's own ``repair_messages`` makes of what its loader loaded (None where
        there is none, or it raises): the default repair's output where that delegates to it."""
        if self._upstream_repair is None or steps.loaded is None or steps.repaired is None:
            return None
        if self._delegates or steps.repaired is steps.messages:  # nothing to repair: nor would it
            return steps.repaired
        try:
            repaired: list[Any] = self._upstream_repair(list(steps.loaded))
        except Exception:  # a history it cannot repair: nothing to compare
            return None
        return repaired

    def _upstream_output(self, steps: _Steps) -> bytes | None:
        """A's side: ``repair_messages``'s output as JSON, where it differs from the default repair's."""
        import histfix

        upstream = self._upstream_of(steps)
        if upstream is None or upstream is steps.repaired or upstream == steps.repaired:
            return None
        return histfix.dump_json(upstream)

    def _compare(self, found: Observation, steps: _Steps, against: FromA) -> None:
        """B's side: load what A's repairs wrote, and say where this release's repairs differ."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        from .._portable import _may_need_conversion

        a_repaired = steps.messages  # A's repair left it alone: A's output is the stored history
        if against.repaired is not None:
            try:
                a_repaired = ModelMessagesTypeAdapter.validate_json(against.repaired)
                found["loads_other_repair"] = None
            except Exception as exc:  # breaks already (repair_output): nothing more to compare
                found["loads_other_repair"] = loader_error(exc)
                a_repaired = None
            if a_repaired is not None and _may_need_conversion(against.repaired):
                a_repaired = _read(against.repaired)  # as load_json reads it
        found["repair_differs"] = _differs(a_repaired, steps.repaired)
        found["upstream_repair_differs"] = None
        if self.upstream_on_a and self._upstream_repair is not None:
            a_upstream = a_repaired if against.upstream is None else _read(against.upstream)
            found["upstream_repair_differs"] = _differs(a_upstream, self._upstream_of(steps))

    def _verdicts(self, steps: _Steps) -> Observation:
        """``histfix compare``'s two verdicts: what a plain Agent sends (from pydantic-ai's loader)
        and what ``histfix.repair`` returns (from ``histfix.load_json``)."""
        from .._check.strict import strict_provider_errors
        from .._compare.outcome import summary_line
        from .._compare.probe import CONTINUE, PLAIN, REPAIRED, prompt_for, prompt_for_loaded

        if steps.loaded is not None:  # what the loader loads, the parser reads: no parse error
            prompt = prompt_for_loaded(steps.loaded)
        else:
            parsed, parse_error = steps.stored()
            if parse_error is not None:
                raise parse_error
            prompt = prompt_for(parsed, None)
        # what the repair returns first: the Agent run below may change the messages it is handed
        repaired, loaded = steps.repaired, steps.loaded
        repaired_problems: list[str] = []
        if steps.messages is None:
            returns = summary_line(REPAIRED, _cannot_load(steps.load_error), None, ())
        elif steps.repair_error is not None:
            returns = summary_line(
                REPAIRED, f"{type(steps.repair_error).__name__}: {steps.repair_error}", None, ()
            )
        else:
            assert repaired is not None
            # where check found nothing to repair, no call goes unanswered: nothing to reject
            repaired_problems = [] if repaired is steps.messages else strict_provider_errors(repaired)
            returns = summary_line(REPAIRED, None, len(repaired), repaired_problems)
        sent: list[Any] | None = None
        raised: str | None = None
        problems: list[str] = []
        if loaded is None:
            raised = _cannot_load(steps.plain_error)
        elif (
            prompt == CONTINUE
            and repaired is loaded
            and not repaired_problems
            and _alternates(loaded)
            and not (self._surplus_results and _calls_an_id_twice(loaded))
        ):
            # nothing for the Agent to change: it sends the history and the new prompt, and a
            # request of a user prompt alone, after a final answer, adds no problem
            from pydantic_ai.messages import ModelRequest, UserPromptPart

            sent = [*loaded, ModelRequest(parts=[UserPromptPart(CONTINUE)])]
        else:
            if self._agent is None:
                from .._compare.probe import PlainAgent

                self._agent = PlainAgent()
            sent, raised = self._agent.send(loaded, prompt)
            problems = [] if sent is None else strict_provider_errors(sent)
        return {
            "sends": summary_line(PLAIN, raised, None if sent is None else len(sent), problems),
            "returns": returns,
            "sent_problems": problems,
            "provider_rejects": self._provider_rejects(sent),
        }

    def _provider_rejects(self, sent: list[Any] | None) -> list[str] | None:
        if self.provider is None or sent is None:
            return None
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        import histfix

        # judged on what was sent as it would be stored and loaded again, as histfix compare shows it
        messages = ModelMessagesTypeAdapter.validate_python(
            ModelMessagesTypeAdapter.dump_python(sent, mode="json")
        )
        return [problem.kind for problem in histfix.check(messages, provider=self.provider)]
