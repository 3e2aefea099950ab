"""Provider profiles on generated histories, sent by this release's own clients to the emulators.

Each history is drawn from a seed (``tests/support/generate.py``: damaged random histories and tool
conversations cut by crashes and slicing, plus the part kinds only some releases have, probed as
``tests/support/fuzz_strategies.py`` does; no URL, which a model class would download), loaded into the
installed release's own types, repaired with ``histfix.repair(h, provider=<API>)`` and sent to
that API's emulator, and repaired with
``provider="any"`` and sent to every API, through ``tests/support/wire.py`` on the session's shared
``provider_bench`` (one server and model per API, as for ``tests/profiles/test_provider_truth.py``).

Asserted: every such history is accepted; a history ``repair`` refuses raises exactly the
"nothing sendable" ValueError, and only when it has no call, prompt or text to send (it must
refuse one whose default repair leaves nothing but system prompts). The counts and the labels of
what was not accepted go to ``conftest.PROVIDERS["generated"]`` and from there into the record
(``providers_generated``) and compat-matrix.md.

How many: in the pinned matrix (the CI budget), ``GENERATED_DEFAULT`` histories per release measured
in full and a quarter of that elsewhere (``volume.sized``), seeds differing by release, rotated: each goes to one API after its profile and to another after ``"any"`` (a round trip
costs 13-20 ms of CPU, so the cross product, 12 per history, would not fit). The full cross
product, every history to every API both ways: ``GENERATED_ALL`` histories with
``HISTFIX_PROVIDER_SAMPLE=all`` (the sweep sets it), or ``HISTFIX_PROVIDER_GENERATED=N`` for N
(the long campaign: ``HISTFIX_PROVIDER_GENERATED=5000 nox -s "tests(2.68.0)" --
tests/profiles/test_provider_generated.py``). A failure names its seed: ``generated_history(seed)``
rebuilds the history on any release.
"""

from __future__ import annotations

import os
import random
import time
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._profiles.targets import PROVIDER_NAMES

from conftest import PROVIDERS, PYDANTIC_AI
from dsl import Json, load, native_return, req, resp, system, to_json, user
from emulators import PROVIDER_APIS
from fuzz_strategies import _EXTRA_RESPONSE, _loads
from generate import random_conversation, random_history
from provider_bench import Bench, tally
from volume import sized
from wire import Outcome

SAMPLE_ENV = "HISTFIX_PROVIDER_SAMPLE"  # as in tests/profiles/test_provider_truth.py
COUNT_ENV = "HISTFIX_PROVIDER_GENERATED"
#: Histories per release in the pinned matrix (rotated over the APIs), and per API with SAMPLE_ENV=all.
GENERATED_DEFAULT = sized(40)
GENERATED_ALL = 500
#: Histories per test item at most: small enough for pytest-xdist to share the work between workers.
BATCH = 25
#: The ValueError ``repair`` raises for a history with nothing sendable (src/histfix/_profiles/run.py).
NOTHING_SENDABLE = "nothing in this history can be sent to"
TARGET_WAYS = ("profile", "any")
#: The pinned matrix's sample: each history sent once each way, to APIs in turn (see ``assigned``).
ROTATED = "rotated"


def generated_count() -> tuple[int, str]:
    """How many histories to send, and how: ``rotated`` (the pinned matrix's sample) or the full
    cross product (``all``, or an explicit count)."""
    wanted = os.environ.get(COUNT_ENV, "").strip()
    if wanted.isdigit() and int(wanted) > 0:
        return int(wanted), f"{COUNT_ENV}={int(wanted)}"
    if os.environ.get(SAMPLE_ENV, "").strip().lower() == "all":
        return GENERATED_ALL, "all"
    return GENERATED_DEFAULT, ROTATED


COUNT, SAMPLE = generated_count()
#: The first seed: a fixed function of the installed release, so every release sends other histories.
FIRST_SEED = zlib.crc32(f"histfix generated {PYDANTIC_AI}".encode()) << 20
SEEDS = range(FIRST_SEED, FIRST_SEED + COUNT)


def assigned(api: str, way: str) -> list[int]:
    """The seeds sent to ``api`` one ``way``: every seed, or (rotated) each seed to one API's
    profile and, after ``"any"``, to the API three places on (every API gets a sixth each way)."""
    if SAMPLE != ROTATED:
        return list(SEEDS)
    shift = 0 if way == "profile" else 3
    return [seed for i, seed in enumerate(SEEDS) if PROVIDER_APIS[(i + shift) % len(PROVIDER_APIS)] == api]


#: (api, way, seeds) per test item: BATCH seeds at most, so pytest-xdist shares the work.
ITEMS = [
    (api, way, seeds[i : i + BATCH])
    for api in PROVIDER_APIS
    for way in TARGET_WAYS
    for seeds in [assigned(api, way)]
    for i in range(0, len(seeds), BATCH)
]


#: Request parts only some releases load (probed): an image as bytes (a URL would be downloaded by
#: some model classes: nothing may reach the network) and a tool-availability delta.
_EXTRA_REQUEST = [
    p
    for p in (
        {
            "part_kind": "user-prompt",
            "content": ["look", {"data": "aGk=", "media_type": "image/png", "kind": "binary"}],
            "timestamp": "2026-01-01T00:00:00Z",
        },
        {"part_kind": "tool-availability-delta", "tools_added": ["get"], "tool_call_id": None},
    )
    if _loads(p, "request")
]


def generated_history(seed: int) -> list[Json]:
    """One stored history for ``seed``: mostly damaged random histories, sometimes a conversation
    that crashes or slicing cut, now and then with a part only newer releases know."""
    rng = random.Random(seed)
    if rng.random() < 0.7:
        history = random_history(seed)
    else:
        history = random_conversation(seed, max_turns=4)
        for _ in range(rng.choice([0, 0, 1, 2])):  # crashes and evictions drop messages
            if history:
                del history[rng.randrange(len(history))]
        if history and rng.random() < 0.3:  # an application keeps only the tail
            history = history[rng.randrange(len(history)) :]
    if not history:  # [] is tested on its own (below): draw a conversation instead
        history = random_conversation(seed, max_turns=4)
    extras = [("request", p) for p in _EXTRA_REQUEST] + [("response", p) for p in _EXTRA_RESPONSE]
    if extras and history and rng.random() < 0.2:
        kind, part = rng.choice(extras)
        fitting = [m for m in history if m["kind"] == kind]
        if fitting:
            message = rng.choice(fitting)
            message["parts"].insert(rng.randint(0, len(message["parts"])), dict(part))
    return history


def _only_system_prompts(history: list[pai.ModelMessage]) -> bool:
    return all(
        isinstance(m, pai.ModelRequest) and all(isinstance(p, pai.SystemPromptPart) for p in m.parts)
        for m in history
    )


def must_refuse(history: list[pai.ModelMessage]) -> bool:
    """A history with more than system prompts whose default repair leaves nothing but system
    prompts: no profile can make it sendable (they never create calls, prompts or responses from
    nothing). One of system prompts alone is a conversation not started yet, as [] is."""
    return not _only_system_prompts(history) and _only_system_prompts(histfix.repair(history))


def may_refuse(history: list[pai.ModelMessage]) -> bool:
    """Whether the history has no tool call, no non-blank prompt and no non-blank text to send:
    only then may a profile find nothing sendable (calls are never dropped, nor is such content)."""
    for message in history:
        for part in message.parts:
            if isinstance(part, pai.ToolCallPart):
                return False
            if isinstance(part, pai.UserPromptPart) and (
                not isinstance(part.content, str) or part.content.strip()
            ):
                return False
            if isinstance(part, pai.TextPart) and part.content.strip():
                return False
    return True


# --- the session's results ------------------------------------------------------------------------


class Generated:
    """What this test measured on the shared ``Bench``: per API and way, seed -> outcome."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.results: dict[str, dict[str, dict[str, Outcome]]] = {
            api: {way: {} for way in TARGET_WAYS} for api in PROVIDER_APIS
        }
        self.refused: set[str] = set()
        self.seconds: dict[str, float] = dict.fromkeys(PROVIDER_APIS, 0.0)

    def summary(self) -> dict[str, Any]:
        apis = {
            api: {
                "client": self.bench.via(api),
                "unavailable": self.bench.unavailable.get(api),
                "seconds": round(self.seconds[api], 2),
                **{way: tally(self.results[api][way]) for way in TARGET_WAYS},
            }
            for api in PROVIDER_APIS
        }
        distinct = len({to_json(generated_history(seed)) for seed in SEEDS})
        return {
            "sample": SAMPLE,
            "histories": COUNT,
            "seeds": f"{SEEDS.start}..{SEEDS.stop - 1}",
            "distinct": distinct,
            "refused": sorted(self.refused),
            "apis": apis,
        }


@pytest.fixture(scope="session")
def generated(provider_bench: Bench) -> Iterator[Generated]:
    started = time.perf_counter()
    found = Generated(provider_bench)
    try:
        yield found
    finally:
        PROVIDERS["generated"] = {**found.summary(), "seconds": round(time.perf_counter() - started, 2)}


# --- the measurement -------------------------------------------------------------------------------


def _repaired(history: list[pai.ModelMessage], target: str) -> list[pai.ModelMessage] | None:
    """``repair(h, provider=target)``, or None when it rightly refuses (anything else fails)."""
    try:
        repaired = histfix.repair(history, provider=target)
    except ValueError as exc:
        assert NOTHING_SENDABLE in str(exc), f"provider={target!r}: unexpected ValueError: {exc}"
        assert may_refuse(history), f"provider={target!r} refused a history with something to send: {exc}"
        return None
    assert not must_refuse(history), f"provider={target!r} returned a history with nothing sendable"
    return repaired


@pytest.mark.uses_sdk
@pytest.mark.parametrize(
    ("api", "way", "seeds"), ITEMS, ids=[f"{api}-{way}-{seeds[0]}+{len(seeds)}" for api, way, seeds in ITEMS]
)
def test_generated_histories_are_accepted(api: str, way: str, seeds: list[int], generated: Generated) -> None:
    target = api if way == "profile" else "any"
    stopped = []
    for seed in seeds:
        name = str(seed)
        repaired = _repaired(load(generated_history(seed)), target)
        if repaired is None:
            generated.refused.add(name)
            continue
        outcome = generated.bench.send(api, repaired, generated.seconds)
        generated.results[api][way][name] = outcome
        if outcome.kind != "accepted":
            stopped.append(f"seed {seed}: {outcome.label()} {outcome.detail[:160]}")
    assert not stopped, (
        f"{api} refuses repair(h, provider={target!r}) of {len(stopped)} of {len(seeds)} "
        f"generated histories (tests/profiles/test_provider_generated.py generated_history(seed)):\n"
        + "\n".join(stopped[:5])
    )


def test_the_seeds_differ_by_release_and_give_distinct_histories() -> None:
    """The pinned matrix covers other histories on every release (the seeds' start is the
    release's), a run's histories are mostly distinct (tiny ones can coincide), and every seed
    is sent both ways (each API gets its share when rotated)."""
    other = zlib.crc32(b"histfix generated 0.0.0") << 20
    assert not set(SEEDS) & set(range(other, other + COUNT))
    histories = {to_json(generated_history(seed)) for seed in SEEDS}
    assert len(histories) >= 0.9 * COUNT
    assert generated_history(SEEDS[0]) == generated_history(SEEDS[0])
    for way in TARGET_WAYS:
        sent = [seed for api, item_way, seeds in ITEMS if item_way == way for seed in seeds]
        share = COUNT // len(PROVIDER_APIS) if SAMPLE == ROTATED else COUNT
        assert sorted(sent) == sorted(list(SEEDS) * (1 if SAMPLE == ROTATED else len(PROVIDER_APIS)))
        assert all(len(assigned(api, way)) >= share for api in PROVIDER_APIS)


# --- nothing sendable ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PROVIDER_NAMES)
def test_an_empty_history_stays_empty(name: str) -> None:
    """A new conversation is not a broken one: ``[]`` stays ``[]`` under every profile."""
    assert histfix.repair([], provider=name) == []
    assert histfix.repair_report([], provider=name).messages == []


ONLY_SYSTEM_PROMPTS = [
    [req(system("You are a travel assistant."))],
    [req(system("one"), system("two")), req(system("three", at=2))],
]


@pytest.mark.parametrize("name", PROVIDER_NAMES)
@pytest.mark.parametrize("raw", ONLY_SYSTEM_PROMPTS, ids=["one request", "two requests"])
def test_only_system_prompts_are_a_conversation_not_started(raw: list[Json], name: str) -> None:
    """Nothing to send yet, as in ``[]``: every profile returns the default repair (the run that
    continues it brings the user's prompt), which no provider's check rejects."""
    history = load(raw)
    assert histfix.repair(history, provider=name) == histfix.repair(history)
    assert histfix.repair_report(history, provider=name).messages == histfix.repair(history)
    assert histfix.check(histfix.repair(history, provider=name), provider=name) == []
    assert not must_refuse(history) and may_refuse(history)


def test_the_oracles_tell_sendable_from_not() -> None:
    """``must_refuse``/``may_refuse`` (which judge the generated histories) on known histories."""
    prompt = load([req(system("sys"), user("hi"))])
    assert not must_refuse(prompt) and not may_refuse(prompt)
    blank = load([req(system("sys"), user("  ")), resp()])
    assert not must_refuse(blank) and may_refuse(blank)
    assert not must_refuse([]) and may_refuse([])


@pytest.mark.parametrize("name", ["openai-responses", "mistral", "openai-chat", "any"])
def test_a_foreign_native_return_then_an_empty_request_raises_the_clear_value_error(name: str) -> None:
    """None of these model classes sends another provider's native tool return (1.0.0's
    OpenAIResponsesModel would send an empty ``input``): nothing in the history reaches the provider."""
    history = load([resp(native_return("web_search", "srv1"), at=10), req()])
    with pytest.raises(ValueError, match=NOTHING_SENDABLE) as raised:
        histfix.repair(history, provider=name)
    assert name in str(raised.value)
    assert histfix.repair(history, provider="anthropic")  # AnthropicModel sends it
