"""Targets with a client of their own, proven over the wire: Groq, Hugging Face, the OpenAI-compatible
gateways of 2.78.0 (Otari, Stav, Cloudflare Workers AI), a Bedrock Llama.

``GroqModel`` (the ``groq`` SDK) and ``HuggingFaceModel`` (``huggingface_hub``'s inference client)
map messages themselves, but what they send is Chat Completions, so ``provider="groq"`` and
``provider="huggingface"`` get the ``openai-chat`` profile. ``otari:`` and ``stav:`` build
``OpenAIChatModel`` on their own provider class, ``cloudflare:`` ``CloudflareChatModel`` (an
``OpenAIChatModel`` subclass with its own HTTP client and profile, at Workers AI's path); they get the
``openai-chat`` profile too, and skip where the installed release has no such provider (feature
detection: ``wire.prefix_absent``). That mapping is only a claim until their
own classes carry the result: here every history of the provider truth's sample
(``test_provider_truth.SELECTED``; on its other fully measured release, the newest, its fixed sample:
``FULL_HERE``) goes through the installed release's ``GroqModel`` and
``HuggingFaceModel``, over HTTP, to the strict Chat Completions emulator, after
``repair(h, provider=<prefix>)`` and after ``repair(h, provider="any")``; both must be accepted.
As stored and after the default repair are data (``conftest.PROVIDERS["prefixes"]``). The
generated histories of ``test_provider_generated`` go through them too, both profile ways: in the
pinned matrix a sixth of the release's seeds per prefix and way (as each API gets when rotated),
with ``HISTFIX_PROVIDER_SAMPLE=all`` (the sweep) every seed.

``wire.BEDROCK_LLAMA`` is a model, not a prefix: ``BedrockConverseModel`` for a Llama model, which
Bedrock refuses a turn of tool results and anything else (``provider="bedrock:<that model>"`` runs
the ``tool_results_alone`` pass). Only its profile way is asserted: ``provider="any"`` names no model,
and takes Bedrock's default family (Claude), which accepts text beside results; it is not sent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from test_provider_generated import (
    BATCH,
    NOTHING_SENDABLE,
    ROTATED,
    SEEDS,
    _repaired,
    generated_history,
    may_refuse,
)
from test_provider_generated import SAMPLE as GENERATED_SAMPLE
from test_provider_truth import HISTORIES, SAMPLE, SAMPLE_ENV, SAMPLE_EVERY, SELECTED, Named, _load

import histfix
from histfix._profiles.targets import UNPROVEN_PREFIXES, api_of_prefix, resolve_provider

from conftest import PROVIDERS, PYDANTIC_AI
from dsl import call, load, req, resp, user
from provider_bench import Bench, tally
from wire import BEDROCK_LLAMA, PREFIX_BUILDERS, Outcome, client_for, prefix_absent

PREFIXES = tuple(PREFIX_BUILDERS)
#: The release measured on every case here in the pinned matrix: the oldest, whose model classes
#: differ most from today's (the newest already is, in test_provider_truth). Elsewhere the truth
#: test's fixed sample, unless that test sends everything (HISTFIX_PROVIDER_SAMPLE=all, the sweep).
FULL_HERE = "1.0.0"
CASES_HERE = (
    SELECTED
    if SAMPLE != "all"
    or str(PYDANTIC_AI) == FULL_HERE
    or os.environ.get(SAMPLE_ENV, "").strip().lower() == "all"
    else [h for i, h in enumerate(HISTORIES) if h.seed or i % SAMPLE_EVERY == 0]
)
CASES_SAMPLE = SAMPLE if CASES_HERE is SELECTED else f"every {SAMPLE_EVERY}"
WAYS = ("stored", "histfix", "profile", "any")
#: The generated histories' ways, kept beside the corpus's in each prefix's summary.
GENERATED_WAYS = {"profile": "gen_profile", "any": "gen_any"}
#: The ways asserted accepted per target (the rest are data): a model's target names a model that
#: ``"any"`` does not (see the module docstring).
ASSERTED = dict.fromkeys(PREFIXES, ("profile", "any")) | {BEDROCK_LLAMA: ("profile",)}


def generated_seeds(prefix: str, way: str) -> list[int]:
    """The seeds sent through ``prefix``'s class one ``way``: every seed, or (rotated) a sixth of
    them, other seeds for each prefix and way (as ``test_provider_generated.assigned``)."""
    if GENERATED_SAMPLE != ROTATED:
        return list(SEEDS)
    # three slots per way: a prefix after the third shares the slot of the one three before it
    slot = PREFIXES.index(prefix) % 3 + (0 if way == "profile" else 3)
    return [seed for i, seed in enumerate(SEEDS) if i % 6 == slot]


GENERATED_ITEMS = [
    (prefix, way, seeds[i : i + BATCH])
    for prefix in PREFIXES
    for way in ASSERTED[prefix]
    for seeds in [generated_seeds(prefix, way)]
    for i in range(0, len(seeds), BATCH)
]


class PrefixResults:
    """What this file measured: per prefix, corpus case -> way -> outcome, and generated way -> seed -> outcome."""

    def __init__(self) -> None:
        self.corpus: dict[str, dict[str, dict[str, Outcome]]] = {prefix: {} for prefix in PREFIXES}
        self.generated: dict[str, dict[str, dict[str, Outcome]]] = {
            prefix: {way: {} for way in GENERATED_WAYS} for prefix in PREFIXES
        }

    def summary(self, bench: Bench) -> dict[str, Any]:
        """Per prefix: its client, the corpus ways' counts, and the generated ways' (``gen_*``)."""
        prefixes = {}
        for prefix, cases in self.corpus.items():
            entry: dict[str, Any] = {
                "client": bench.via(prefix),
                "unavailable": bench.unavailable.get(prefix),
                "cases": len(cases),
            }
            for way in WAYS:
                entry[way] = tally({name: ways[way] for name, ways in cases.items() if way in ways})
            for way, key in GENERATED_WAYS.items():
                entry[key] = tally(self.generated[prefix][way])
            prefixes[prefix] = entry
        return {"sample": CASES_SAMPLE, "generated": GENERATED_SAMPLE, "prefixes": prefixes}


@pytest.fixture(scope="session")
def prefix_results(provider_bench: Bench) -> Iterator[PrefixResults]:
    found = PrefixResults()
    try:
        yield found
    finally:
        PROVIDERS["prefixes"] = found.summary(provider_bench)


@pytest.mark.uses_sdk
@pytest.mark.parametrize("api", PREFIXES)
@pytest.mark.parametrize("named", CASES_HERE, ids=[h.name for h in CASES_HERE])
def test_prefix_profile_is_accepted_through_its_own_model_class(
    named: Named, api: str, provider_bench: Bench, prefix_results: PrefixResults
) -> None:
    history = _load(named)
    ways = {
        "stored": history,
        "histfix": histfix.repair(history, repair_last_response=named.repair_last_response),
    }
    for way in ASSERTED[api]:
        try:
            ways[way] = histfix.repair(history, provider=api if way == "profile" else "any")
        except ValueError as exc:  # the profile's model class would send nothing of it: nothing to send
            assert NOTHING_SENDABLE in str(exc) and may_refuse(history), exc
    seconds: dict[str, float] = {}
    outcomes = {way: provider_bench.send(api, sent, seconds) for way, sent in ways.items()}
    prefix_results.corpus[api][named.name] = outcomes
    for way, outcome in outcomes.items():
        assert outcome.kind != "client-error", (
            f"{way}: the client failed after the emulator answered: {outcome}"
        )
    for way in ASSERTED[api]:
        if way not in outcomes:
            continue  # refused with the clear "nothing sendable" error (checked above)
        assert outcomes[way].kind == "accepted", (
            f"{api} ({outcomes[way]}) refuses repair(h, provider={api if way == 'profile' else 'any'!r}) "
            f"of {named.name!r}"
        )


@pytest.mark.uses_sdk
@pytest.mark.parametrize("api", PREFIXES)
def test_the_prefix_client_exists_and_speaks_the_api_its_profile_is_for(api: str) -> None:
    """An SDK or model class missing on a release is named here; and the emulator each prefix
    is proven against is the API histfix maps it to (so the proof is of the profile it gets)."""
    if absent := prefix_absent(api):
        pytest.skip(absent)
    found = client_for(api)
    assert not isinstance(found, str), found
    assert resolve_provider(api).apis == (found.api,)
    assert api_of_prefix(api.partition(":")[0]) == found.api
    assert api not in UNPROVEN_PREFIXES


@pytest.mark.uses_sdk("groq", "openai-chat")
def test_groq_reaches_the_chat_rules_at_its_own_path(provider_bench: Bench) -> None:
    """The Groq client is judged by the Chat Completions rules, at the path Groq's SDK posts to:
    a history left with a dangling call meets the same verdict as through OpenAIChatModel (refused
    where the release sends it unrepaired, before 2.10), and is accepted once repaired for Groq."""
    history = load([req(user("go")), resp(call("f", "c1"), at=5, model_name="m"), req(user("next"))])
    seconds: dict[str, float] = {}
    through_groq = provider_bench.send("groq", history, seconds)
    assert provider_bench.emulator("openai-chat").last().path == "/openai/v1/chat/completions"
    assert through_groq.label() == provider_bench.send("openai-chat", history, seconds).label()
    assert provider_bench.send("groq", histfix.repair(history, provider="groq"), seconds).kind == "accepted"


@pytest.mark.uses_sdk
@pytest.mark.parametrize(
    ("api", "way", "seeds"),
    GENERATED_ITEMS,
    ids=[f"{prefix}-{way}-{seeds[0]}+{len(seeds)}" for prefix, way, seeds in GENERATED_ITEMS],
)
def test_generated_histories_are_accepted_through_the_prefix_class(
    api: str,
    way: str,
    seeds: list[int],
    provider_bench: Bench,
    prefix_results: PrefixResults,
) -> None:
    target = api if way == "profile" else "any"
    stopped = []
    seconds: dict[str, float] = {}
    for seed in seeds:
        repaired = _repaired(load(generated_history(seed)), target)
        if repaired is None:  # nothing sendable, rightly refused (test_provider_generated counts those)
            continue
        outcome = provider_bench.send(api, repaired, seconds)
        prefix_results.generated[api][way][str(seed)] = outcome
        if outcome.kind != "accepted":
            stopped.append(f"seed {seed}: {outcome.label()} {outcome.detail[:160]}")
    assert not stopped, (
        f"{api} refuses repair(h, provider={target!r}) of {len(stopped)} of {len(seeds)} generated "
        "histories (tests/profiles/test_provider_generated.py generated_history(seed)):\n"
        + "\n".join(stopped[:5])
    )
