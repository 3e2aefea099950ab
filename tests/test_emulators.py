"""Selftests of the provider emulators: every rule with a hand-written request, the HTTP plumbing,
and each provider's real SDK parsing the emulators' minimal valid answers (release-independent)."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

import emulators
from emulator_cases import ACCEPTED, GOOD, PATHS, VIOLATIONS, Accepted, Violation
from emulators import PROVIDER_APIS, Emulator

TIMEOUT = 5.0
BUILT = tuple(api for api in PROVIDER_APIS if api in PATHS)


def post(
    emulator: Emulator, path: str, body: object, *, raw: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request to `emulator`, with a timeout: status, headers (lower-case names), body."""
    connection = http.client.HTTPConnection("127.0.0.1", emulator.port, timeout=TIMEOUT)
    try:
        payload = raw if raw is not None else json.dumps(body).encode()
        connection.request("POST", path, payload, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Emulator]]:
    """One strict server per built API (optional template rules on) for the whole module."""
    running = {api: emulators.serve(api, strict_templates=True, request_timeout=TIMEOUT) for api in BUILT}
    yield running
    for emulator in running.values():
        emulator.close()


def _api(case: Violation) -> str:
    return case.rule.split(".")[0]


def _path(case: Violation) -> str:
    return case.path or PATHS[_api(case)]


def _error_text(api: str, body: bytes) -> str:
    """The message inside the provider's error body (each API's own shape)."""
    payload = json.loads(body)
    if api in ("openai-chat", "openai-responses", "gemini"):
        return str(payload["error"]["message"])
    if api == "anthropic":
        assert payload["type"] == "error"
        return str(payload["error"]["message"])
    return str(payload["message"])


# --- the rules --------------------------------------------------------------------------------


def test_every_rule_has_a_selftest() -> None:
    tested = {case.rule for case in VIOLATIONS}
    assert [rule.id for rule in emulators.all_rules() if rule.id not in tested] == []
    assert {rule.api for rule in emulators.all_rules()} == set(BUILT)
    assert BUILT == PROVIDER_APIS  # every API has a valid request and a path in emulator_cases


@pytest.mark.parametrize("api", BUILT)
def test_valid_request_is_accepted(api: str, servers: dict[str, Emulator]) -> None:
    emulator = servers[api]
    status, headers, body = post(emulator, PATHS[api], GOOD[api])
    verdict = emulator.last()
    assert (status, verdict.accepted, verdict.rule, verdict.message) == (200, True, None, "")
    assert headers["content-type"] == "application/json"
    assert verdict.body == GOOD[api]
    assert json.loads(body)


@pytest.mark.parametrize("case", VIOLATIONS, ids=lambda case: case.rule)
def test_rule_rejects_its_violation(case: Violation, servers: dict[str, Emulator]) -> None:
    api = _api(case)
    emulator = servers[api]
    status, _, body = post(emulator, _path(case), case.body)
    verdict = emulator.last()
    rule = next(rule for rule in emulators.all_rules() if rule.id == case.rule)
    assert (verdict.accepted, verdict.rule, verdict.verified, verdict.status) == (
        False,
        case.rule,
        rule.verified,
        status,
    )
    assert status == 400
    assert _error_text(api, body) == verdict.message
    assert case.expect in verdict.message
    assert emulators.judge(api, case.body, path=_path(case), strict_templates=True) == verdict


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda case: f"{case.api}: {case.source.split(' (')[0]}")
def test_recorded_real_shapes_are_accepted(case: Accepted) -> None:
    """Shapes the real APIs answered 200 in pydantic-ai's recordings (tools/calibrate.py)."""
    verdict = emulators.judge(case.api, case.body, path=case.path or PATHS[case.api], strict_templates=True)
    assert verdict.accepted, f"{case.source}: {verdict.rule}: {verdict.message}"


@pytest.mark.parametrize(
    "case",
    [
        case
        for case in VIOLATIONS
        if not next(rule for rule in emulators.all_rules() if rule.id == case.rule).verified
    ],
    ids=lambda case: case.rule,
)
def test_unverified_rules_switch_off(case: Violation) -> None:
    verdict = emulators.judge(
        _api(case), case.body, path=_path(case), enforce_unverified=False, strict_templates=True
    )
    assert verdict.rule != case.rule


def test_a_server_without_unverified_rules_accepts_their_violations() -> None:
    case = next(case for case in VIOLATIONS if case.rule == "anthropic.first_message_user")
    with emulators.serve("anthropic", enforce_unverified=False) as emulator:
        assert post(emulator, _path(case), case.body)[0] == 200
        assert emulator.last().accepted
        broken = next(case for case in VIOLATIONS if case.rule == "anthropic.tool_use_without_result")
        assert post(emulator, _path(broken), broken.body)[0] == 400  # verified rules still hold


def test_every_module_documents_its_rules() -> None:
    import importlib

    for module_name in ("openai_chat", "openai_responses", "anthropic", "gemini", "bedrock", "mistral"):
        module = importlib.import_module(f"emulators.{module_name}")
        doc = module.__doc__ or ""
        for rule in module.SPEC.rules:
            assert rule.id.split(".", 1)[1] in doc, f"{rule.id} is not described in {module_name}'s docstring"


def test_template_rules_are_opt_in() -> None:
    optional = [case for case in VIOLATIONS if case.rule.endswith("roles_alternate")]
    assert optional
    for case in optional:
        assert emulators.judge(_api(case), case.body).accepted


def test_judge_rejects_a_non_object_body() -> None:
    verdict = emulators.judge("openai-chat", ["not", "an", "object"])
    assert (verdict.accepted, verdict.rule, verdict.status) == (False, emulators.MALFORMED_JSON, 400)


# --- HTTP plumbing ----------------------------------------------------------------------------


@pytest.mark.parametrize("api", BUILT)
def test_malformed_json_and_unknown_path(api: str, servers: dict[str, Emulator]) -> None:
    emulator = servers[api]
    status, _, body = post(emulator, PATHS[api], None, raw=b"{not json")
    assert (status, emulator.last().rule) == (400, emulators.MALFORMED_JSON)
    assert _error_text(api, body)
    status, _, body = post(emulator, "/no/such/path", GOOD[api])
    assert (status, emulator.last().rule) == (404, emulators.UNKNOWN_PATH)
    assert "/no/such/path" in _error_text(api, body)


def test_serve_picks_free_ports_and_close_frees_them() -> None:
    with emulators.serve("openai-chat") as first, emulators.serve("openai-chat") as second:
        assert first.port != second.port and first.port > 0
        assert first.base_url == f"http://127.0.0.1:{first.port}"
        assert post(first, PATHS["openai-chat"], GOOD["openai-chat"])[0] == 200
        assert post(second, PATHS["openai-chat"], {"messages": []})[0] == 400
        assert [v.accepted for v in first.verdicts] == [True]
        assert [v.accepted for v in second.verdicts] == [False]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", first.port))  # the port is free again


def test_unknown_api_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="valid: openai-chat, openai-responses, anthropic"):
        emulators.serve("openai")
    with pytest.raises(ValueError, match="unknown provider API"):
        emulators.judge("cohere", {})


def test_a_server_that_cannot_bind_names_its_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from emulators import _base

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(98, "Address already in use")

    monkeypatch.setattr(_base._Server, "__init__", refuse)
    with pytest.raises(RuntimeError, match=r"the bedrock emulator cannot start on 127\.0\.0\.1: .*in use"):
        emulators.serve("bedrock")


def test_last_and_clear() -> None:
    with emulators.serve("openai-chat") as emulator:
        with pytest.raises(LookupError, match=r"openai-chat emulator .* has received no request"):
            emulator.last()
        post(emulator, PATHS["openai-chat"], GOOD["openai-chat"])
        assert emulator.last().accepted
        emulator.clear()
        assert emulator.verdicts == []


def test_a_stalled_request_is_dropped_not_hung() -> None:
    with emulators.serve("openai-chat", request_timeout=0.3) as emulator:
        with socket.create_connection(("127.0.0.1", emulator.port), timeout=TIMEOUT) as client:
            client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            started = time.monotonic()
            assert client.recv(1024) == b""  # the server gave up on the body and closed
            assert time.monotonic() - started < TIMEOUT
        assert emulator.verdicts == []
        assert post(emulator, PATHS["openai-chat"], GOOD["openai-chat"])[0] == 200  # still serving


def test_a_chunked_request_body_is_read(servers: dict[str, Emulator]) -> None:
    payload = json.dumps(GOOD["openai-chat"]).encode()
    chunked = (
        b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (payload[:10], payload[10:])) + b"0\r\n\r\n"
    )
    connection = http.client.HTTPConnection("127.0.0.1", servers["openai-chat"].port, timeout=TIMEOUT)
    try:
        connection.putrequest("POST", PATHS["openai-chat"])
        connection.putheader("Transfer-Encoding", "chunked")
        connection.endheaders(chunked)
        assert connection.getresponse().status == 200
    finally:
        connection.close()
    assert servers["openai-chat"].last().body == GOOD["openai-chat"]


def test_streaming_openai_chat_is_sse_with_usage(servers: dict[str, Emulator]) -> None:
    body = {**GOOD["openai-chat"], "stream": True, "stream_options": {"include_usage": True}}
    status, headers, raw = post(servers["openai-chat"], PATHS["openai-chat"], body)
    assert (status, headers["content-type"]) == (200, "text/event-stream")
    data = [line[len("data: ") :] for line in raw.decode().splitlines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(item) for item in data[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == "ok"
    assert chunks[-1]["usage"]["total_tokens"] == 2


# --- the real SDKs parse the minimal answers ----------------------------------------------------


def _sdk(name: str) -> Any:
    return pytest.importorskip(name, reason=f"the {name} SDK is not installed in this session")


def test_openai_sdk_parses_chat(servers: dict[str, Emulator]) -> None:
    openai = _sdk("openai")
    client = openai.OpenAI(
        base_url=servers["openai-chat"].sdk_base_url, api_key="dummy", timeout=TIMEOUT, max_retries=0
    )
    messages = GOOD["openai-chat"]["messages"]
    completion = client.chat.completions.create(model="gpt-4o", messages=messages)
    assert completion.choices[0].message.content == "ok"
    assert completion.usage.total_tokens == 2
    stream = client.chat.completions.create(
        model="gpt-4o", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "ok"
    assert chunks[-1].usage.total_tokens == 2
    with pytest.raises(openai.BadRequestError, match="did not have response messages: call_x"):
        client.chat.completions.create(
            model="gpt-4o",
            messages=[
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
            ],
        )


def test_anthropic_sdk_parses_messages(servers: dict[str, Emulator]) -> None:
    anthropic = _sdk("anthropic")
    client = anthropic.Anthropic(
        base_url=servers["anthropic"].sdk_base_url, api_key="dummy", timeout=TIMEOUT, max_retries=0
    )
    good = GOOD["anthropic"]
    message = client.messages.create(model=good["model"], max_tokens=64, messages=good["messages"])
    assert (message.content[0].text, message.usage.output_tokens) == ("ok", 1)
    assert servers["anthropic"].last().path == "/v1/messages"
    beta = client.beta.messages.create(model=good["model"], max_tokens=64, messages=good["messages"])
    assert beta.content[0].text == "ok"
    assert servers["anthropic"].last().path.startswith("/v1/messages")  # newer SDKs drop ?beta=true
    with client.messages.stream(model=good["model"], max_tokens=64, messages=good["messages"]) as stream:
        assert "".join(stream.text_stream) == "ok"
        final = stream.get_final_message()
    assert (final.stop_reason, final.usage.output_tokens) == ("end_turn", 1)
    with pytest.raises(
        anthropic.BadRequestError, match="tool_use ids were found without tool_result"
    ) as caught:
        client.messages.create(
            model=good["model"],
            max_tokens=64,
            messages=[
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
                },
                {"role": "user", "content": "hi"},
            ],
        )
    assert caught.value.body["error"]["type"] == "invalid_request_error"


def test_openai_sdk_parses_responses(servers: dict[str, Emulator]) -> None:
    openai = _sdk("openai")
    client = openai.OpenAI(
        base_url=servers["openai-responses"].sdk_base_url, api_key="dummy", timeout=TIMEOUT, max_retries=0
    )
    good = GOOD["openai-responses"]
    response = client.responses.create(model=good["model"], input=good["input"])
    assert (response.output_text, response.usage.total_tokens) == ("ok", 2)
    with client.responses.stream(model=good["model"], input=good["input"]) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_response()
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert "response.output_text.delta" in events
    assert final.output_text == "ok"
    with pytest.raises(openai.BadRequestError, match="No tool output found for function call call_x"):
        client.responses.create(
            model=good["model"],
            input=[
                {"role": "user", "content": "hi"},
                {"type": "function_call", "call_id": "call_x", "name": "f", "arguments": "{}"},
            ],
        )


def test_gemini_signature_rule_is_for_gemini_3_current_turn_only() -> None:
    earlier_turn = [
        *GOOD["gemini"]["contents"][:1],
        {"role": "model", "parts": [{"functionCall": {"name": "get_time", "args": {}}}]},
        GOOD["gemini"]["contents"][2],
    ]
    body = {
        "contents": [
            *earlier_turn[:2],
            {"role": "user", "parts": [{"functionResponse": {"name": "get_time", "response": {}}}]},
            {"role": "model", "parts": [{"text": "x"}]},
            {"role": "user", "parts": [{"text": "next"}]},
        ]
    }
    assert emulators.judge(
        "gemini", body, path="/v1beta/models/gemini-3-pro-preview:generateContent"
    ).accepted
    current = {"contents": body["contents"][:3]}
    assert not emulators.judge(
        "gemini", current, path="/v1beta/models/gemini-3-pro-preview:generateContent"
    ).accepted
    assert emulators.judge("gemini", current, path="/v1beta/models/gemini-2.5-pro:generateContent").accepted


def test_bedrock_signature_rules_are_for_claude_and_pass_its_own_signatures() -> None:
    def body(reasoning: dict[str, Any]) -> dict[str, Any]:
        hello = {"role": "user", "content": [{"text": "hi"}]}
        answer = {"role": "assistant", "content": [{"reasoningContent": reasoning}, {"text": "hello"}]}
        return {"messages": [hello, answer, {"role": "user", "content": [{"text": "next"}]}]}

    claude = "/model/us.anthropic.claude-sonnet-4-5-v1%3A0/converse"
    nova = "/model/amazon.nova-pro-v1%3A0/converse"
    signed = body({"reasoningText": {"text": "hmm", "signature": "EqQBCkYIBRgCKkB"}})
    unsigned = body({"reasoningText": {"text": "hmm"}})
    redacted = body({"redactedContent": "b3BhcXVl"})
    assert emulators.judge("bedrock", signed, path=claude).accepted
    assert emulators.judge("bedrock", redacted, path=claude).accepted
    assert emulators.judge("bedrock", unsigned, path=claude).rule == "bedrock.thinking_signature_missing"
    assert emulators.judge("bedrock", unsigned, path=nova).accepted  # only Claude verifies signatures


def test_gemini_streaming_forms(servers: dict[str, Emulator]) -> None:
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    status, headers, raw = post(servers["gemini"], path + "?alt=sse", GOOD["gemini"])
    assert (status, headers["content-type"]) == (200, "text/event-stream")
    assert json.loads(raw.decode().split("data: ", 1)[1])["candidates"][0]["content"]["parts"] == [
        {"text": "ok"}
    ]
    status, headers, raw = post(servers["gemini"], path, GOOD["gemini"])
    assert (status, headers["content-type"]) == (200, "application/json")
    assert json.loads(raw)[0]["usageMetadata"]["totalTokenCount"] == 2


def test_google_genai_sdk_parses_generate_content(servers: dict[str, Emulator]) -> None:
    _sdk("google.genai")
    from google import genai
    from google.genai import errors, types

    client = genai.Client(
        api_key="dummy", http_options=types.HttpOptions(base_url=servers["gemini"].sdk_base_url, timeout=5000)
    )
    contents = GOOD["gemini"]["contents"][:1]
    response = client.models.generate_content(model="gemini-2.5-flash", contents=contents)
    assert (response.text, response.usage_metadata.total_token_count) == ("ok", 2)
    assert servers["gemini"].last().path.endswith("/models/gemini-2.5-flash:generateContent")  # v1 or v1beta
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents=contents))
    assert "".join(chunk.text or "" for chunk in chunks) == "ok"
    assert servers["gemini"].last().path.endswith(":streamGenerateContent?alt=sse")
    with pytest.raises(errors.ClientError, match="function response turn comes immediately after") as caught:
        client.models.generate_content(
            model="gemini-2.5-flash",
            contents=[{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}],
        )
    assert (caught.value.code, caught.value.status) == (400, "INVALID_ARGUMENT")


def test_bedrock_sdk_parses_converse(servers: dict[str, Emulator]) -> None:
    boto3 = _sdk("boto3")
    from botocore.config import Config

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=servers["bedrock"].sdk_base_url,
        aws_access_key_id="dummy",
        aws_secret_access_key="dummy",
        config=Config(retries={"max_attempts": 1}, connect_timeout=TIMEOUT, read_timeout=TIMEOUT),
    )
    model = "us.anthropic.claude-emulated-v1:0"
    good = GOOD["bedrock"]
    response = client.converse(modelId=model, messages=good["messages"], system=good["system"])
    assert response["output"]["message"]["content"] == [{"text": "ok"}]
    assert response["usage"]["totalTokens"] == 2
    assert servers["bedrock"].last().path == PATHS["bedrock"]
    events = list(client.converse_stream(modelId=model, messages=good["messages"])["stream"])
    assert [next(iter(event)) for event in events] == [
        "messageStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]
    assert events[1]["contentBlockDelta"]["delta"] == {"text": "ok"}
    assert servers["bedrock"].last().path.endswith("/converse-stream")
    with pytest.raises(client.exceptions.ValidationException, match="must start with a user message"):
        client.converse(
            modelId="amazon.nova-pro-v1:0", messages=[{"role": "assistant", "content": [{"text": "x"}]}]
        )


def test_mistral_error_codes(servers: dict[str, Emulator]) -> None:
    cases = {"mistral.user_after_tool": "3230", "mistral.tool_call_id_format": "3280"}
    for case in VIOLATIONS:
        if case.rule in cases:
            status, _, body = post(servers["mistral"], PATHS["mistral"], case.body)
            payload = json.loads(body)
            assert (status, payload["object"], payload["code"]) == (400, "error", cases[case.rule])


def test_mistral_sdk_parses_chat(servers: dict[str, Emulator]) -> None:
    try:  # mistralai 2.x moved the client into mistralai.client
        from mistralai.client import Mistral
    except ImportError:
        Mistral = _sdk("mistralai").Mistral
    client = Mistral(api_key="dummy", server_url=servers["mistral"].sdk_base_url, timeout_ms=5000)
    good = GOOD["mistral"]
    response = client.chat.complete(model=good["model"], messages=good["messages"])
    assert (response.choices[0].message.content, response.usage.total_tokens) == ("ok", 2)
    events = list(client.chat.stream(model=good["model"], messages=good["messages"]))
    assert "".join(event.data.choices[0].delta.content or "" for event in events) == "ok"
    assert servers["mistral"].last().body["stream"] is True
    with pytest.raises(Exception, match="Unexpected role 'user' after role 'tool'") as caught:
        client.chat.complete(
            model=good["model"], messages=[*good["messages"][:5], {"role": "user", "content": "x"}]
        )
    assert getattr(caught.value, "status_code", 400) == 400


def test_an_emulator_is_reachable_in_a_fresh_network_namespace() -> None:
    """`unshare -rn` starts with loopback down; the emulator brings it up and answers there."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rn", "true"], check=False).returncode:
        pytest.skip("unshare -rn is not available here (no user namespaces)")
    script = (
        "import json, urllib.request\n"
        "from emulators import serve\n"
        "with serve('openai-chat') as e:\n"
        "    body = json.dumps({'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}]}).encode()\n"
        "    request = urllib.request.Request(e.sdk_base_url + '/chat/completions', data=body,\n"
        "                                     headers={'content-type': 'application/json'})\n"
        "    print(urllib.request.urlopen(request, timeout=5).status, e.last().accepted)\n"
    )
    tests = Path(__file__).parent / "support"
    done = subprocess.run(
        ["unshare", "-rn", sys.executable, "-c", script],
        cwd=tests,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["200", "True"]


def test_one_result_per_call_counts_calls_not_ids() -> None:
    """Chat: an id called twice in one message may be answered twice; Responses: a call_id called
    again later is a new call, whose output is not a duplicate (each rule refuses only a second
    result for one call)."""
    user = {"role": "user", "content": "hi"}

    def calls(*ids: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
            ],
        }

    def tool(call_id: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call_id, "content": "ok"}

    assert emulators.judge(
        "openai-chat", {"messages": [user, calls("x", "x"), tool("x"), tool("x")]}
    ).accepted
    third = emulators.judge(
        "openai-chat", {"messages": [user, calls("x", "x"), tool("x"), tool("x"), tool("x")]}
    )
    assert third.rule == "openai-chat.tool_without_tool_calls"

    def fc(call_id: str) -> dict[str, Any]:
        return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}

    def fco(call_id: str) -> dict[str, Any]:
        return {"type": "function_call_output", "call_id": call_id, "output": "ok"}

    again = [user, fc("x"), fco("x"), {"role": "user", "content": "more"}, fc("x"), fco("x")]
    assert emulators.judge("openai-responses", {"model": "gpt-4o", "input": again}).accepted
    duplicate = emulators.judge("openai-responses", {"model": "gpt-4o", "input": [*again, fco("x")]})
    assert duplicate.rule == "openai-responses.duplicate_function_call_output"


def test_chat_completions_is_served_where_each_compatible_client_posts(servers: dict[str, Emulator]) -> None:
    """OpenAI's path, Groq's, and Cloudflare Workers AI's under any account (CloudflareChatModel's);
    a path beside them is unknown."""
    emulator = servers["openai-chat"]
    for path in (
        "/v1/chat/completions",
        "/openai/v1/chat/completions",
        "/client/v4/accounts/0123abc/ai/v1/chat/completions",
    ):
        status, _, _ = post(emulator, path, GOOD["openai-chat"])
        assert (status, emulator.last().accepted) == (200, True), path
    for path in ("/client/v4/accounts/ai/v1/chat/completions", "/client/v4/accounts/x/ai/run/@cf/model"):
        status, _, _ = post(emulator, path, GOOD["openai-chat"])
        assert (status, emulator.last().rule) == (404, emulators.UNKNOWN_PATH), path
