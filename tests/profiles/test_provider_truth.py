"""Provider truth: every corpus history and the seeds' scenarios, sent by this release's own clients.

Each history goes through ``Agent(model).run`` with the installed release's model class for every
provider API it can reach (``tests/support/wire.py``), to that API's strict loopback emulator
(``tests/support/emulators/``), five ways: as stored, after ``histfix.repair``, (where the release
has it) after upstream ``repair_messages``, after ``histfix.repair(h, provider=<the API>)`` and after
``histfix.repair(h, provider="any")``. One round trip per distinct history; one server and one
model per API for the whole session (``tests/support/provider_bench.py``, shared with
``tests/profiles/test_provider_generated.py``). On 2.10+ "as stored" already includes pydantic-ai's own
repair before each request: what a user of that release sends.

Asserted: both profile ways are accepted, every case, every API; where histfix delegates to upstream (``histfix.backend_info().backend == "upstream"``),
histfix's outcome equals upstream's per case and API; the seeds' scenarios are accepted by every
API after ``histfix.repair`` (except the documented provider rules repair does not cover, below).
Everything else is data: the outcomes go to ``conftest.PROVIDERS`` and from there into the
``--record-outcome`` record and compat-matrix.md.

Which cases run: every case on the releases measured in full (``volume.FULL``); elsewhere every
``SAMPLE_EVERY``-th case (a fixed slice of a fixed order) plus the seeds' scenarios;
``HISTFIX_PROVIDER_SAMPLE=all`` runs every case everywhere (the sweep sets it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import messages as pai
from test_provider_generated import NOTHING_SENDABLE, may_refuse

import histfix

from conftest import PROVIDERS
from corpus import CASES
from dsl import Json, call, load_history, req, resp, ret, text, user
from emulators import PROVIDER_APIS
from provider_bench import Bench, tally
from volume import FULL
from wire import Outcome, client_for

#: The releases measured in full (volume.FULL: the newest and the oldest) send every case; the other pinned
#: releases run a fixed sample to keep `nox` within its budget. The provider sweep
#: (`nox -s sweep -- --providers`) sends every case on every release, so the cross product of each
#: pinned release (2.9.1 and 2.10.0 among them, the last without and first with internal repair)
#: is measured there, recorded in tests/data/sweep-providers.json and compat-matrix.md.
SAMPLE_EVERY = 10
SAMPLE_ENV = "HISTFIX_PROVIDER_SAMPLE"


@dataclass(frozen=True)
class Named:
    """A stored history to send: a corpus case or one of the seeds' scenarios."""

    name: str
    history: list[Json]
    repair_last_response: bool = True
    needs: frozenset[str] = field(default_factory=frozenset)
    seed: bool = False


_ABORTED = [
    req(user("test")),
    resp(call("retrieve_documents", "call_1", {"search_query": "test"}), at=5),
    req(user("test")),
]
#: The seeds' four scenarios as in tests/test_agent_e2e.py (the prompt follows `wire.prompt_for`).
SCENARIOS = [
    Named("seed: aborted mid-tool", _ABORTED, seed=True),
    Named("seed: trailing calls + new prompt", _ABORTED[:2], seed=True),
    Named(
        "seed: slice starting on a tool result",
        [req(ret("get", "c9", "42", at=3)), resp(text("it is 42"), at=4, model_name="m")],
        seed=True,
    ),
    Named(
        "seed: state='interrupted' response + new prompt",
        [req(user("test")), resp(call("retrieve_documents", "call_1"), at=5, state="interrupted")],
        needs=frozenset({"response_state"}),
        seed=True,
    ),
]
#: Provider rules `histfix.repair` does not cover that stop a seeds' scenario after repair, with why.
#: (api, scenario, rule id) -> reason. Only these are xfailed; any other rejection fails the test.
_SLICE = "seed: slice starting on a tool result"
_STARTS_ON_A_RESPONSE = (
    "repair drops the orphaned result and leaves the slice starting on the model's response (as"
    " upstream repair_messages does, by design); "
)
NOT_COVERED: dict[tuple[str, str, str], str] = {
    ("anthropic", _SLICE, "anthropic.first_message_user"): _STARTS_ON_A_RESPONSE
    + "Anthropic wants the first message from the user (rule unverified in providers.md)",
    ("bedrock", _SLICE, "bedrock.start_with_user"): _STARTS_ON_A_RESPONSE
    + "Bedrock Converse: 'A conversation must start with a user message' (verified)",
    ("gemini", _SLICE, "gemini.empty_text"): _STARTS_ON_A_RESPONSE
    + "GoogleModel then opens the contents with an empty user text part, which Gemini rejects (verified)",
    **{
        (api, _SLICE, "UserError"): _STARTS_ON_A_RESPONSE + "1.21.0's Agent raises UserError for a history "
        "opening on a response, whatever the provider (1.20.0 and 1.22.0 do not)"
        for api in PROVIDER_APIS
    },
    **{
        ("mistral", scenario.name, "mistral.tool_call_id_format"): "the seeds' tool call id 'call_1' is"
        " not Mistral's format (9 characters a-z, A-Z, 0-9; code 3280, verified); releases that send ids"
        " as stored are rejected, and repair never rewrites ids"
        for scenario in SCENARIOS
    },
}


HISTORIES = [
    *SCENARIOS,
    *(Named(c.name, c.history, c.repair_last_response, c.needs) for c in CASES),
]


def sample_mode() -> str:
    """``all`` or ``every N`` for this run."""
    wanted = os.environ.get(SAMPLE_ENV, "").strip().lower()
    if wanted == "all" or FULL:
        return "all"
    if wanted.isdigit() and int(wanted) > 0:
        return f"every {int(wanted)}"
    return f"every {SAMPLE_EVERY}"


SAMPLE = sample_mode()
_EVERY = 1 if SAMPLE == "all" else int(SAMPLE.split()[1])
SELECTED = [h for i, h in enumerate(HISTORIES) if h.seed or i % _EVERY == 0]
DELEGATES = histfix.backend_info().backend == "upstream"


def _upstream_repair() -> Callable[..., list[pai.ModelMessage]] | None:
    found = getattr(pai, "repair_messages", None)
    return found if callable(found) else None


UPSTREAM = _upstream_repair()


# --- the session's results ------------------------------------------------------------------------


class Truth:
    """What this test measured, on the session's shared ``Bench`` (``tests/support/provider_bench.py``)."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        #: api -> case -> way -> outcome
        self.results: dict[str, dict[str, dict[str, Outcome]]] = {api: {} for api in PROVIDER_APIS}
        self.seconds: dict[str, float] = dict.fromkeys(PROVIDER_APIS, 0.0)

    def send(self, api: str, history: list[pai.ModelMessage]) -> Outcome:
        return self.bench.send(api, history, self.seconds)

    def summary(self) -> dict[str, Any]:
        """Per API: what ran, and the non-accepted outcomes per way (for compat-matrix.md)."""
        apis: dict[str, Any] = {}
        for api in PROVIDER_APIS:
            results = self.results[api]
            entry: dict[str, Any] = {
                "client": self.bench.via(api),
                "unavailable": self.bench.unavailable.get(api),
                "cases": len(results),
                "seconds": round(self.seconds[api], 2),
            }
            for way in WAYS:
                entry[way] = tally({name: ways[way] for name, ways in results.items() if way in ways})
            apis[api] = entry
        measured = sorted({name for cases in self.results.values() for name in cases})
        return {"sample": SAMPLE, "selected": len(SELECTED), "measured": measured, "apis": apis}

    def detail(self) -> dict[str, Any]:
        return {
            api: {name: {way: o.as_json() for way, o in ways.items()} for name, ways in sorted(cases.items())}
            for api, cases in self.results.items()
        }


@pytest.fixture(scope="session")
def bench(provider_bench: Bench) -> Iterator[Truth]:
    started = time.perf_counter()
    truth = Truth(provider_bench)
    try:
        yield truth
    finally:
        PROVIDERS["summary"] = {**truth.summary(), "seconds": round(time.perf_counter() - started, 2)}
        PROVIDERS["detail"] = truth.detail()


# --- the measurement -------------------------------------------------------------------------------


def _load(named: Named) -> list[pai.ModelMessage]:
    if "response_state" in named.needs and "state" not in pai.ModelResponse.__dataclass_fields__:
        pytest.skip("ModelResponse.state arrived in 1.92.0")
    return load_history(named)  # type: ignore[arg-type]  # a Named has a Case's history and needs


#: The ways a history is sent: as stored, the default repairs, and the provider profiles ("profile"
#: is ``repair(h, provider=<this API>)``, "any" is ``repair(h, provider="any")``, both with the
#: default ``repair_last_response=True``: a profile promises a history the provider accepts).
WAYS = ("stored", "histfix", "upstream", "profile", "any")
PROFILE_WAYS = ("profile", "any")


def _ways(named: Named, history: list[pai.ModelMessage], api: str) -> dict[str, list[pai.ModelMessage]]:
    last = named.repair_last_response
    ways = {"stored": history, "histfix": histfix.repair(history, repair_last_response=last)}
    if UPSTREAM is not None:
        ways["upstream"] = UPSTREAM(history, repair_last_response=last)
    for way, target in (("profile", api), ("any", "any")):
        try:
            ways[way] = histfix.repair(history, provider=target)
        except ValueError as exc:  # the profile's model class would send nothing of it: nothing to send
            assert NOTHING_SENDABLE in str(exc) and may_refuse(history), f"provider={target!r}: {exc}"
    return ways


@pytest.mark.uses_sdk
@pytest.mark.parametrize("api", PROVIDER_APIS)
@pytest.mark.parametrize("named", SELECTED, ids=[h.name for h in SELECTED])
def test_provider_truth(named: Named, api: str, bench: Truth) -> None:
    history = _load(named)
    outcomes = {way: bench.send(api, h) for way, h in _ways(named, history, api).items()}
    bench.results[api][named.name] = outcomes
    for way, outcome in outcomes.items():
        assert outcome.kind != "client-error", (
            f"{way}: the client failed after the emulator answered: {outcome}"
        )
    if DELEGATES:
        assert outcomes["histfix"].label() == outcomes["upstream"].label()
    for way in PROFILE_WAYS:
        if way not in outcomes:
            continue  # refused with the clear "nothing sendable" error (checked in _ways)
        assert outcomes[way].kind == "accepted", (
            f"{api} refuses repair(h, provider={api if way == 'profile' else 'any'!r}) of {named.name!r}: "
            f"{outcomes[way]}"
        )
    if named.seed:
        fixed = outcomes["histfix"]
        reason = NOT_COVERED.get((api, named.name, fixed.rule))
        if fixed.kind != "accepted" and reason:
            pytest.xfail(reason)
        assert fixed.kind == "accepted", f"{api} still refuses the repaired {named.name!r}: {fixed}"


@pytest.mark.uses_sdk
@pytest.mark.parametrize("api", PROVIDER_APIS)
def test_every_api_is_reachable_on_this_release(api: str) -> None:
    """An SDK or model class missing on a release is named here, never a silently empty table."""
    found = client_for(api)
    assert not isinstance(found, str), found
