"""check(provider=) / is_provider_valid(provider=): exactly what a provider rejects, in its own words.

Two directions, on the real installed release: a history the profile repaired has nothing left that
its provider rejects (no false alarms), and a history the provider's strict emulator rejects as
stored, sent by the release's own model class, is never called valid (no misses: what check
calls valid is sent, and must be accepted). The second is
measured on releases that send a history as stored (before 2.10.0 pydantic-ai repairs nothing on
the wire), every case on the fully measured releases and a fixed sample elsewhere.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from packaging.version import Version

import histfix
from histfix._profiles.registry import RULES
from histfix._profiles.wording import BY_API

from conftest import PYDANTIC_AI, mistral_profile_fits_ids
from corpus import CASES
from dsl import Case, call, load, load_history, real, req, ret, system, text, user
from emulators import PROVIDER_APIS, all_rules, judge
from wire import client_for

#: Each API's profile, "any", and a model whose profile has a pass of its own (tool_results_alone).
#: Corpus cases of which some profiles' model classes send nothing: those profiles raise the clear error.
NOTHING_SENDABLE_CASES = frozenset({"X_foreign_native_return_then_empty_request"})
TARGETS = (*PROVIDER_APIS, "any", "bedrock:us.meta.llama3-3-70b-instruct-v1:0")
#: Before 2.10.0 a release sends the stored history as it is (from 2.10.0 it repairs it first).
SENDS_AS_STORED = Version("2.10.0") > PYDANTIC_AI
#: check(provider=) against the wire on every case here (the oldest, whose serializers differ most);
#: elsewhere every SAMPLE_EVERY-th case (the sweep's provider truth sends them all).
FULL_RELEASES = frozenset({"1.0.0"})
SAMPLE_EVERY = 10
SENT = [c for i, c in enumerate(CASES) if str(PYDANTIC_AI) in FULL_RELEASES or i % SAMPLE_EVERY == 0]


def _key(problem: histfix.Problem) -> tuple[object, ...]:
    return (problem.kind, problem.message_index, problem.part_index, problem.tool_call_id)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_profile_repair_leaves_nothing_its_provider_rejects(case: Case, target: str) -> None:
    try:
        repaired = histfix.repair(load_history(case), provider=target)
    except ValueError as exc:  # the profile's model class would send nothing of it
        assert case.name in NOTHING_SENDABLE_CASES and "nothing in this history can be sent" in str(exc)
        return
    assert histfix.check(repaired, provider=target) == []
    assert histfix.is_provider_valid(repaired, provider=target)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_without_a_provider_the_problems_are_todays_and_name_who_rejects_them(case: Case) -> None:
    history = load_history(case)
    problems = histfix.check(history)
    for problem in problems:
        assert set(problem.rejected_by) <= set(PROVIDER_APIS)
        assert problem.provider_error is None
        if problem.kind == "consecutive_requests":  # merged on the wire; a system-prompt-only one: Gemini
            assert problem.rejected_by in ((), ("gemini",))
        else:
            assert problem.rejected_by
    found = {_key(p): p for p in problems}
    for api in PROVIDER_APIS:
        for problem in histfix.check(history, provider=api):
            assert problem.rejected_by == (api,)
            assert problem.provider_error
            if _key(problem) in found:  # a validator finding: rejected_by without a provider says so
                assert api in found[_key(problem)].rejected_by


def test_each_api_rejects_what_its_wire_rejects() -> None:
    history = load(
        [
            req(user("q")),
            real(call("get", "abcDEF123"), at=1),  # an id every API's format takes
            req(
                ret("get", "abcDEF123"), ret("get", "abcDEF123", "again")
            ),  # a second result beside the first
            real(text("ok"), at=2),
            req(user("one")),
            req(user("two")),  # two requests in a row: merged by every model class
        ]
    )
    (duplicate, consecutive) = histfix.check(history)
    assert duplicate.kind == "duplicate_result"
    assert duplicate.rejected_by == PROVIDER_APIS  # OpenAI Chat verified, Responses unverified
    assert consecutive.kind == "consecutive_requests" and consecutive.rejected_by == ()
    (chat,) = histfix.check(history, provider="openai-chat")
    assert chat.provider_error == (
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
    )
    (responses,) = histfix.check(history, provider="openai-responses")
    assert responses.provider_error == "Duplicate function_call_output for call_id abcDEF123."
    assert histfix.is_provider_valid(
        load([req(user("q")), real(text("ok"), at=1)]), provider="openai-responses"
    )
    assert not histfix.is_provider_valid(history)  # repair would still merge the two requests
    (anthropic,) = histfix.check(history, provider="anthropic:claude-sonnet-4-5")
    assert anthropic.provider_error == (
        "each tool_use must have a single result. Found multiple tool_result blocks with id: abcDEF123"
    )
    (both,) = histfix.check(history, provider="any")
    assert both.rejected_by == duplicate.rejected_by
    assert both.provider_error is not None and both.provider_error.startswith(
        "openai-chat: Invalid parameter"
    )
    assert "; anthropic: each tool_use" in both.provider_error


def test_a_late_result_is_rejected_where_the_wire_pairs_by_position() -> None:
    history = load(
        [
            req(user("q")),
            real(call("get", "a"), at=1),
            real(text("meanwhile"), at=2),
            req(ret("get", "a")),  # answers the call across response 2
        ]
    )
    (late,) = histfix.check(history)
    assert late.kind == "late_result"
    assert "openai-responses" not in late.rejected_by  # Responses pairs by call_id
    assert histfix.check(history, provider="openai-responses") == []
    (chat,) = histfix.check(history, provider="openai-chat")
    assert chat.provider_error is not None and "role 'tool' must be a response" in chat.provider_error


def test_a_shadowed_call_is_rejected_everywhere_but_where_the_wire_pairs_by_call_id() -> None:
    """A call whose id a later, answered call reuses: Responses pairs the output with every earlier
    call of that ``call_id`` (its strict emulator, the oracle here, accepts the items), every other
    API pairs by position; the same call with no later answer is rejected by all six."""
    history = load(
        [
            req(user("q")),
            real(call("get", "s"), at=1),
            req(user("again")),
            real(call("get", "s"), at=2),
            req(ret("get", "s")),
            real(text("ok"), at=3),
        ]
    )
    items: list[dict[str, str]] = [
        {"role": "user", "content": "q"},
        {"type": "function_call", "call_id": "s", "name": "get", "arguments": "{}"},
        {"role": "user", "content": "again"},
        {"type": "function_call", "call_id": "s", "name": "get", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "s", "output": "ok"},
        {"role": "assistant", "content": "ok"},
    ]
    assert judge("openai-responses", {"model": "gpt-4o", "input": items}).accepted
    assert not judge("openai-responses", {"model": "gpt-4o", "input": items[:3]}).accepted
    (shadowed,) = histfix.check(history)
    assert (shadowed.kind, shadowed.message_index, shadowed.tool_call_id) == ("shadowed_call", 1, "s")
    assert shadowed.rejected_by == ("openai-chat", "anthropic", "gemini", "bedrock", "mistral")
    assert histfix.check(history, provider="openai-responses") == []
    (dangling,) = histfix.check(history[:3])
    assert dangling.kind == "dangling_call" and dangling.rejected_by == PROVIDER_APIS
    (responses,) = histfix.check(history[:3], provider="openai-responses")
    assert responses.provider_error == "No tool output found for function call s."


def test_mistral_ids_are_a_problem_only_where_the_release_sends_them_as_stored() -> None:
    """From the release whose own Mistral profile fits tool call ids (the oracle: that profile, read
    from pydantic-ai), MistralModel rewrites ids that are not nine letters or digits; before, Mistral
    rejects each such id, the call's and the result's."""
    history = load(
        [req(user("go")), real(call("f", "a.b"), at=1), req(ret("f", "a.b")), real(text("ok"), at=2)]
    )
    found = histfix.check(history, provider="mistral")
    if mistral_profile_fits_ids():
        assert found == []
        assert histfix.repair(history, provider="mistral") == history
    else:
        assert [(p.kind, p.message_index) for p in found] == [("invalid_call_id", 1), ("invalid_call_id", 2)]
        assert histfix.check(histfix.repair(history, provider="mistral"), provider="mistral") == []


def test_only_system_prompts_is_a_conversation_not_started_as_an_empty_one_is() -> None:
    """``[]`` and a history of nothing but system prompts are both a conversation the user's next
    prompt starts: no provider rejects either, and a profile returns each as the default repair does."""
    for history in ([], load([req(system("be brief"))])):
        for provider in ("anthropic", "any", "gemini"):
            assert histfix.check(history, provider=provider) == []
            assert histfix.repair(history, provider=provider) == histfix.repair(history)


@pytest.mark.uses_sdk("mistral", "openai-chat")
def test_a_fallback_model_is_checked_for_every_model_it_may_use() -> None:
    from pydantic_ai.models.fallback import FallbackModel

    built = {api: client_for(api) for api in ("openai-chat", "mistral")}
    clients = [found for found in built.values() if not isinstance(found, str)]
    if len(clients) < 2:
        pytest.skip(f"no client: {built}")
    built_models = [client.build("http://127.0.0.1:9") for client in clients]  # nothing is ever sent
    models = [model for model, _ in built_models]

    async def close() -> None:
        for _, closing in built_models:
            await closing()

    history = load(
        [
            req(user("q")),
            real(call("get", "abcDEF123"), at=1),
            req(ret("get", "abcDEF123"), ret("get", "abcDEF123", "again")),
            real(text("ok"), at=2),
        ]
    )
    # an empty last request sends nothing: the wire ends on the response, which only Mistral refuses
    history = load([req(user("q")), real(text("ok"), at=1), req(instructions="be brief")])
    assert histfix.check(history, provider=models[0]) == []
    (problem,) = histfix.check(history, provider=FallbackModel(*models))
    assert problem.rejected_by == ("mistral",)
    assert problem.provider_error == (
        "Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant"
    )
    asyncio.run(close())


def test_bad_provider_and_flags() -> None:
    history = load([req(user("q"))])
    with pytest.raises(ValueError) as unknown:
        histfix.check(history, provider="nope")
    assert str(unknown.value) == (
        "unknown provider 'nope': use one of any, openai-chat, openai-responses, anthropic, gemini, "
        "bedrock, mistral, a pydantic-ai model-name prefix (openai, google-gla, groq, ...: "
        "histfix.PROVIDER_NAMES lists them) or a model string such as anthropic:claude-sonnet-4-5, "
        "or a pydantic-ai Model"
    )
    with pytest.raises(ValueError, match="unknown provider"):
        histfix.is_provider_valid(history, provider="nope")
    with pytest.raises(TypeError, match="repair_last_response must be a bool"):
        histfix.check(history, provider="anthropic", repair_last_response="yes")  # type: ignore[arg-type]
    assert histfix.check([], provider="any") == []


def test_wording_is_the_emulators_wording() -> None:
    """Every text check() quotes is one the strict emulators answer with (both from providers.md),
    its placeholders filled or not; an error the release raises before sending is not an answer."""
    answers = [(rule.api, _pattern(rule.message)) for rule in all_rules()]

    def answered(api: str, text_: str) -> bool:
        return any(a == api and pattern.fullmatch(text_) for a, pattern in answers)

    for api, table in BY_API.items():
        for what, text_ in table.items():
            if what == "empty":  # a schema error: the emulator fills it in
                assert judge(api, {"messages": [], "contents": []}).message == text_, (api, what)
            else:
                assert answered(api, text_), (api, what)
    for rule in RULES:
        for api, text_ in rule.wording.items():
            if not re.match(r"\w+Error: ", text_):
                assert answered(api, text_), (rule.name, api, text_)


#: a placeholder of the wording tables left unfilled in a text check() returns
_UNFILLED = re.compile(r"\{(n|m|id|ids|call_id|count|name|role|error)\}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_several_apis_are_each_worded_as_each_alone_words_it(case: Case) -> None:
    """check(provider="any") words a problem for every API that rejects it exactly as checking for
    that API alone does, its placeholders filled."""
    history = load_history(case)
    alone = {
        api: {
            (p.kind, p.message_index, p.part_index, p.tool_call_id): p
            for p in histfix.check(history, provider=api)
        }
        for api in PROVIDER_APIS
    }
    for problem in histfix.check(history, provider="any"):
        assert not _UNFILLED.search(problem.provider_error or ""), problem
        place = (problem.kind, problem.message_index, problem.part_index, problem.tool_call_id)
        said = [alone[api].get(place) for api in problem.rejected_by]
        if len(problem.rejected_by) < 2 or None in said:
            continue  # several APIs together can reject what none rejects alone (and the reverse)
        words = [
            f"{api}: {one.provider_error}" for api, one in zip(problem.rejected_by, said, strict=True) if one
        ]
        assert problem.provider_error == "; ".join(words), case.name


def _pattern(template: str) -> re.Pattern[str]:
    """An emulator message template as a pattern: each ``{placeholder}`` stands for any text."""
    pieces = re.split(r"\{[^{}]*\}", template)
    return re.compile(".+".join(re.escape(piece) for piece in pieces), re.DOTALL)


# --- no misses: what the emulator rejects as stored, check(provider=) names ------------------------


@pytest.fixture(scope="module")
def sender(provider_bench: Any) -> Any:
    """Sends through the provider tests' one bench (its clients, emulators and outcome cache)."""
    seconds: dict[str, float] = {}
    return lambda api, history: provider_bench.send(api, history, seconds)


@pytest.mark.skipif(not SENDS_AS_STORED, reason="from 2.10.0 pydantic-ai repairs the history before sending")
@pytest.mark.uses_sdk
@pytest.mark.parametrize("api", PROVIDER_APIS)
@pytest.mark.parametrize("case", SENT, ids=lambda c: c.name)
def test_what_check_calls_valid_the_provider_accepts_as_stored(case: Case, api: str, sender: Any) -> None:
    """No misses: a history ``check(provider=api)`` finds nothing in is accepted by ``api``'s
    emulator, sent as stored by the release's own model class (only those are sent: whatever check
    flags is not valid anyway, which keeps this to a few round trips)."""
    history = load_history(case)
    if histfix.check(history, provider=api):
        assert not histfix.is_provider_valid(history, provider=api)
        return
    outcome = sender(api, history)
    assert outcome.kind != "rejected", (
        f"{api} rejects {case.name!r} ({outcome.rule}: {outcome.detail}) but check(provider=) finds nothing"
    )


def test_provider_names_are_case_insensitive() -> None:
    history = load([req(user("q")), real(call("get", "c1"), at=1), req(user("next"))])
    assert histfix.check(history, provider="Anthropic") == histfix.check(history, provider="anthropic")
    assert histfix.repair(history, provider=" ANY ") == histfix.repair(history, provider="any")
    (problem,) = histfix.check(history, provider="Bedrock:us.meta.llama3-3-70b-instruct-v1:0")
    assert problem.rejected_by == ("bedrock",)
