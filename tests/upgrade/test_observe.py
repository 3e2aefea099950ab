"""The upgrade check's observation of one history, on the installed release, against what `histfix
compare` says of it there (its own probe runs a plain Agent for every history; the observation
skips the Agent where what it sends is known, and loads each history once)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest

import histfix
from histfix._compare import probe as compare_probe
from histfix._compare.outcome import Outcome
from histfix._compare.probe import PLAIN, REPAIRED, probe, prompt_for, prompt_for_loaded
from histfix._release.switches import run_adds_surplus_results
from histfix.upgrade import _observe as observe_module
from histfix.upgrade._observe import FIELDS, FromA, Observer, parse

from dsl import call, req, resp, ret, text, to_json, user
from upgrade_cases import EXAMPLES, histories

#: The provider whose profile judges what is sent (the one whose rules look at every call id).
PROVIDER = "mistral"


def compare_says(raw: bytes) -> dict[str, Any]:
    """The verdicts as `histfix compare`'s probe makes them, the Agent run every time; with what
    PROVIDER's profile rejects in what is sent (``provider_rejects`` under ``--provider``)."""
    observation = probe(raw, prompt_for(json.loads(raw), None))
    sent = observation[PLAIN]["messages"]
    rejects = None
    if sent is not None:
        messages = ModelMessagesTypeAdapter.validate_python(sent)
        rejects = [problem.kind for problem in histfix.check(messages, provider=PROVIDER)]
    return {
        "sends": Outcome.of(observation, PLAIN).summary(PLAIN),
        "returns": Outcome.of(observation, REPAIRED).summary(REPAIRED),
        "sent_problems": observation[PLAIN]["problems"],
        "provider_rejects": rejects,
    }


def test_every_verdict_is_compares_and_the_agent_runs_only_where_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs: list[int] = []
    send = compare_probe.PlainAgent.send

    def counted(self: Any, history: Any, prompt: Any) -> Any:
        runs.append(1)
        return send(self, history, prompt)

    stored = histories()
    said = {key: compare_says(raw) for key, raw in stored.items()}
    monkeypatch.setattr(compare_probe.PlainAgent, "send", counted)
    observer = Observer(PROVIDER)
    for key, raw in stored.items():
        found = observer.observe(raw).found
        assert list(found) == list(FIELDS), key
        assert {name: found[name] for name in said[key]} == said[key], key
    assert Observer().observe(stored["example-aborted_mid_tool"]).found["provider_rejects"] is None
    # the finished conversations that need no repair are the fast path's (and prove it is taken)
    assert 0 < len(runs) <= len(stored) - 10


def _stamps_left_out(data: Any) -> Any:
    """Messages as JSON data without what each run stamps afresh (the time, the run's ids)."""
    if isinstance(data, dict):
        return {k: _stamps_left_out(v) for k, v in data.items() if k not in RUN_STAMPS}
    if isinstance(data, list):
        return [_stamps_left_out(v) for v in data]
    return data


#: What an Agent run stamps on the request it sends: different in every run.
RUN_STAMPS = ("timestamp", "run_id", "conversation_id")


def test_the_run_stopped_at_its_first_request_sends_and_raises_what_the_whole_run_does() -> None:
    # the oracle: the whole run, its model a plain function answering text, as a user would run it
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    sent_whole: list[Any] = []

    def answer(messages: list[Any], info: Any) -> ModelResponse:
        sent_whole.append(list(messages))
        return ModelResponse(parts=[TextPart("done")])

    whole, stopped = Agent(FunctionModel(answer)), compare_probe.PlainAgent()
    compared = 0
    for key, raw in histories().items():
        try:
            loaded = ModelMessagesTypeAdapter.validate_json(raw)
        except ValueError:
            continue
        prompt = prompt_for(json.loads(raw), None)
        sent_whole.clear()
        raised: str | None = None
        try:
            whole.run_sync(prompt, message_history=list(loaded))
        except Exception as exc:
            raised = f"{type(exc).__name__}: {exc}"
        if not sent_whole and raised is None:
            raised = "the run ended without a model request: nothing was sent"
        sent, said = stopped.send(list(loaded), prompt)
        assert said == raised, key
        if sent_whole:
            assert sent is not None, key
            expected = ModelMessagesTypeAdapter.dump_python(sent_whole[0], mode="json")
            got = ModelMessagesTypeAdapter.dump_python(sent, mode="json")
            assert _stamps_left_out(got) == _stamps_left_out(expected), key
            compared += 1
        else:
            assert sent is None, key
    assert compared > len(histories()) // 2


def test_an_id_called_twice_in_one_response_runs_the_agent_where_its_repair_adds_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # finished, alternating and left alone by the repair (first in, first out pairs both results),
    # yet a run that repairs by a dict sends a surplus result for the first call
    raw = to_json(
        [
            req(user("go")),
            resp(call("a", "x"), call("b", "x")),
            req(ret("a", "x"), ret("b", "x")),
            resp(text("done"), at=2),
        ]
    )
    said = compare_says(raw)
    runs: list[int] = []
    send = compare_probe.PlainAgent.send

    def counted(self: Any, history: Any, prompt: Any) -> Any:
        runs.append(1)
        return send(self, history, prompt)

    monkeypatch.setattr(compare_probe.PlainAgent, "send", counted)
    found = Observer(PROVIDER).observe(raw).found
    assert found["changes"] == {}
    assert {name: found[name] for name in said} == said
    surplus = run_adds_surplus_results()
    assert bool(said["sent_problems"]) is surplus  # the release's own run decides
    assert len(runs) == surplus  # elsewhere the fast path is exact, and taken


def test_a_history_is_validated_once_when_load_json_would_not_convert_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = (EXAMPLES / "aborted_mid_tool.json").read_bytes()
    calls: list[object] = []
    validate = ModelMessagesTypeAdapter.validate_json

    def counting(data: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(data)
        return validate(data, *args, **kwargs)

    monkeypatch.setattr(ModelMessagesTypeAdapter, "validate_json", counting)
    found = Observer().observe(raw).found
    assert found["loads"] is None and found["load_json"] is None and found["changes"]
    assert calls == [raw]


RESERVED = "__pydantic_ai__"
#: A run paused for a deferred call (2.78.0 marks the request it wrote then), and the user's answer.
PAUSED_THEN_ANSWERED = [
    req(user("clean up")),
    resp(call("list", "c1"), call("delete", "c2")),
    req(ret("list", "c1", "a b"), metadata={RESERVED: {"deferred_pause": True}}),
    req(user("Actually, never mind.")),
]


@pytest.mark.skipif(
    "metadata" not in {f.name for f in dataclasses.fields(ModelRequest)}, reason="no request metadata here"
)
def test_a_pause_mark_merged_otherwise_than_here_is_a_difference_in_behaviour() -> None:
    raw = to_json(PAUSED_THEN_ANSWERED)
    here = json.loads(histfix.dump_json(histfix.repair(histfix.load_json(raw))))
    merged = next(i for i, message in enumerate(here) if message["kind"] == "request" and message["metadata"])
    verdicts = {}
    for mark in (True, False):  # what another release's repair may have written
        other = json.loads(json.dumps(here))
        other[merged]["metadata"] = {RESERVED: {"deferred_pause": True} if mark else {}}
        against = FromA(repaired=json.dumps(other).encode())
        verdicts[mark] = Observer().observe(raw, against=against).found["repair_differs"]
    same = here[merged]["metadata"][RESERVED].get("deferred_pause") is True
    assert verdicts[same] is None  # what this release writes itself
    assert verdicts[not same] == {
        "changed": 1,
        "changed_paths": [f"[{merged}].metadata.{RESERVED}.deferred_pause"],
        "bookkeeping": 0,
        "bookkeeping_paths": [],
    }


def typed(value: Any) -> Any:
    """A JSON value with every type spelled out (1, 1.0 and True differ; NaN equals itself)."""
    if isinstance(value, dict):
        return ("dict", [(key, typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [typed(item) for item in value])
    return (type(value).__name__, repr(value))


def outcome(read: Any, text: bytes) -> Any:
    try:
        return ("read", typed(read(text)))
    except Exception as exc:  # what json.loads raises is what the observation reports
        return ("raised", type(exc).__name__, str(exc))


# where pydantic-core's parser and json.loads might part: numbers, escapes, surrogates, control
# characters, encodings, depth, duplicate keys, and what neither reads
ODD_JSON = [
    b'"a\x01b"',
    b'"tab\there"',
    b'"\\u0000"',
    b'"\x7f"',
    b'"\\/"',
    b'"\\x"',
    b'"\\U0041"',
    b'"\\ud800"',
    b'"\\udc00"',
    b'"\\ud800\\u0041"',
    b'"\\ud83d\\ude00"',
    b'{"\\ud800": 1}',
    b'"\xed\xa0\x80"',
    b'"\xff"',
    b'"\xc3\xa9"',
    b"\xef\xbb\xbf[1]",
    "[1]".encode("utf-16"),
    b"[NaN, Infinity, -Infinity]",
    b"nan",
    b"-NaN",
    b"Infinity1",
    b"1e400",
    b"-1e400",
    b"[1e-400]",
    b"-0",
    b"-0.0",
    b"[1.0, 1, true, null]",
    b"10000000000000000000000000000",
    b"123456789012345678901234567890.5",
    b"0.1",
    b"2.2250738585072011e-308",
    b"5e-324",
    b"9007199254740993",
    b"9007199254740993.0",
    b"1E+2",
    b"1.7976931348623157e308",
    b'{"a": 1, "b": 2, "a": 3}',
    b"[" * 300 + b"]" * 300,
    b"[" * 5000 + b"]" * 5000,
    b"",
    b" [1] ",
    b"\t[1]\r\n",
    b"[1] x",
    b"[1,]",
    b"['a']",
    b"01",
    b"+1",
    b".5",
    b"1.",
    b"0x10",
    b"-",
    b"[-]",
    b"1e",
    b"[true false]",
    b'{"a" 1}',
]


@pytest.mark.parametrize("text", ODD_JSON)
def test_the_parse_reads_odd_json_as_json_loads_does(text: bytes) -> None:
    assert outcome(parse, text) == outcome(json.loads, text)


def test_the_parse_reads_every_test_history_as_json_loads_does() -> None:
    for key, raw in histories().items():
        assert outcome(parse, raw) == outcome(json.loads, raw), key


def test_the_prompt_read_from_the_loaded_messages_is_the_stored_jsons() -> None:
    for key, raw in histories().items():
        try:
            loaded = ModelMessagesTypeAdapter.validate_json(raw)
        except ValueError:
            continue
        assert prompt_for_loaded(loaded) == prompt_for(json.loads(raw), None), key


def test_a_history_the_loader_loads_is_parsed_only_for_a_comparison_field_by_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[bytes] = []
    monkeypatch.setattr(observe_module, "parse", lambda raw: parsed.append(raw) or json.loads(raw))
    raw = (EXAMPLES / "aborted_mid_tool.json").read_bytes()
    Observer().observe(raw, want_repaired=True)
    assert parsed == []
    Observer().observe(raw, want_repaired=True, translations=True)  # the parts compared with the JSON's
    Observer().observe(b"[1]")  # the loader refuses it: the verdicts read the JSON
    assert parsed == [raw, b"[1]"]
