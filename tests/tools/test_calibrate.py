"""tools/calibrate.py on small hand-made recordings: where each request goes, and what it counts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from calibrate import calibrate, interactions, main, problems, read_source, real_error, target

CHAT = "https://api.openai.com/v1/chat/completions"
RESPONSES = "https://api.openai.com/v1/responses"
ANTHROPIC = "https://api.anthropic.com/v1/messages?beta=true"
HI = {"role": "user", "content": "hi"}
REASONING_ALONE = "Item 'rs_1' of type 'reasoning' was provided without its required following item."


def cassette(*recorded: tuple[str, object, int, object]) -> str:
    """A cassette in pydantic-ai's form: (uri, request body, status, response body) per interaction."""
    return yaml.safe_dump(
        {
            "interactions": [
                {
                    "request": {"method": "POST", "uri": uri, "headers": {}, "parsed_body": body},
                    "response": {
                        "status": {"code": status, "message": ""},
                        "headers": {},
                        "parsed_body": answer,
                    },
                }
                for uri, body, status, answer in recorded
            ]
        }
    )


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def recordings(tmp_path: Path) -> Path:
    root = tmp_path / "pydantic-ai"
    calls = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
    }
    write(
        root,
        "tests/models/cassettes/test_a/test_ok.yaml",
        cassette(
            (CHAT, {"model": "gpt-4o", "messages": [HI]}, 200, {}),
            (CHAT, {"model": "gpt-4o", "messages": [HI]}, 429, {"error": {"message": "slow down"}}),
        ),
    )
    write(  # the real API accepted what the emulator refuses: a false rejection
        root,
        "tests/models/anthropic/cassettes/test_b/test_too_strict.yaml",
        cassette((ANTHROPIC, {"model": "claude-x", "max_tokens": 9, "messages": [HI, calls, HI]}, 200, {})),
    )
    write(
        root,
        "tests/cassettes/test_c/test_refused.yaml",
        cassette(
            (
                RESPONSES,
                {"model": "gpt-5", "input": [HI, {"type": "reasoning", "id": "rs_1", "summary": []}, HI]},
                400,
                {"error": {"message": REASONING_ALONE, "type": "invalid_request_error"}},
            ),
            (
                RESPONSES,
                {"model": "nope", "input": "hi"},
                400,
                {"error": {"message": "The model does not exist."}},
            ),
            (  # a history 400 the emulator does not reproduce (it accepts the body)
                RESPONSES,
                {"model": "gpt-5", "input": "hi"},
                400,
                {"error": {"message": REASONING_ALONE}},
            ),
            ("https://api.cohere.com/v2/chat", {"messages": [HI]}, 200, {}),
        ),
    )
    write(root, "tests/models/test_not_a_cassette.yaml", cassette((CHAT, {"messages": [HI]}, 200, {})))
    return root


def test_target_maps_urls_to_emulators() -> None:
    assert target(CHAT).api == "openai-chat"  # type: ignore[union-attr]
    assert target("https://api.groq.com/openai/v1/chat/completions").api == "openai-chat"  # type: ignore[union-attr]
    assert target(RESPONSES).path == "/v1/responses"  # type: ignore[union-attr]
    assert target("https://api.openai.com/v1/responses/compact") is None
    assert target(ANTHROPIC).path == "/v1/messages?beta=true"  # type: ignore[union-attr]
    assert target("https://api.anthropic.com/v1/messages/count_tokens") is None
    gemini = target(
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert (
        gemini is not None and gemini.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    vertex = "https://aiplatform.googleapis.com/v1beta1/projects/p/locations/global/publishers/google/models/m:generateContent"
    assert target(vertex).path == vertex.split(".com", 1)[1]  # type: ignore[union-attr]
    bedrock = target(
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-pro-v1%3A0/converse"
    )
    assert bedrock is not None and (bedrock.api, bedrock.path) == (
        "bedrock",
        "/model/us.amazon.nova-pro-v1%3A0/converse",
    )
    assert target("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke") is None
    assert target("https://api.mistral.ai/v1/chat/completions").api == "mistral"  # type: ignore[union-attr]
    assert target("https://api.cohere.com/v2/chat") is None


def test_real_error_reads_each_shape() -> None:
    assert real_error({"parsed_body": {"error": {"message": "a"}}}) == "a"
    assert real_error({"parsed_body": {"message": "b"}}) == "b"
    assert real_error({"body": {"string": json.dumps({"error": {"message": "c"}})}}) == "c"
    assert real_error({"body": "plain text"}) == "plain text"
    assert real_error({"parsed_body": {"choices": []}}) == ""


def test_interactions_skip_what_is_not_http() -> None:
    text = yaml.safe_dump({"interactions": [{"request_sample": {}, "response_sample": {}}]})
    assert list(interactions("x.yaml", text)) == []
    body = json.dumps({"messages": [HI]})
    text = yaml.safe_dump(
        {"interactions": [{"request": {"uri": CHAT, "body": body}, "response": {"status": {"code": 200}}}]}
    )
    assert [i.body for i in interactions("x.yaml", text)] == [{"messages": [HI]}]
    with pytest.raises(ValueError, match=r"x\.yaml: not a readable cassette"):
        list(interactions("x.yaml", "{unclosed: ["))


def test_calibrate_counts_each_outcome(recordings: Path) -> None:
    revision, cassettes = read_source(recordings)
    assert [name for name, _ in cassettes] == [
        "tests/cassettes/test_c/test_refused.yaml",
        "tests/models/anthropic/cassettes/test_b/test_too_strict.yaml",
        "tests/models/cassettes/test_a/test_ok.yaml",
    ]
    record = calibrate(revision, cassettes)
    chat, responses, claude = (
        record["emulators"][api] for api in ("openai-chat", "openai-responses", "anthropic")
    )
    assert (chat["requests"], chat["real_2xx"], chat["accepted"], chat["not_judged"]) == (1, 1, 1, 1)
    assert claude["false_rejections"] == {
        "anthropic.tool_use_without_result": [
            "tests/models/anthropic/cassettes/test_b/test_too_strict.yaml#0"
        ]
    }
    assert [e["cassette"] for e in responses["history_4xx_reproduced"]] == [
        "tests/cassettes/test_c/test_refused.yaml#0"
    ]
    assert (
        responses["history_4xx_reproduced"][0]["rule"] == "openai-responses.reasoning_without_following_item"
    )
    assert [e["cassette"] for e in responses["history_4xx_not_reproduced"]] == [
        "tests/cassettes/test_c/test_refused.yaml#2"
    ]
    assert [e["real"] for e in responses["other_4xx"]] == ["The model does not exist."]
    assert record["not_covered"] == {"api.cohere.com/v2/chat": 1}
    assert record["source"]["interactions"] == 7
    assert len(problems(record)) == 2


def test_main_writes_the_record_and_fails_on_problems(recordings: Path, tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    assert main([str(recordings), "--record", str(out)]) == 1
    assert json.loads(out.read_text())["emulators"]["openai-chat"]["accepted"] == 1
    (recordings / "tests/models/anthropic/cassettes/test_b/test_too_strict.yaml").unlink()
    (recordings / "tests/cassettes/test_c/test_refused.yaml").unlink()
    assert main([str(recordings), "--record", str(out)]) == 0


def test_main_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert main([str(tmp_path)]) == 2
    assert "no cassettes" in capsys.readouterr().err


def test_reads_a_bare_git_directory(recordings: Path, tmp_path: Path) -> None:
    def git(*args: str, cwd: Path = recordings) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "recordings")
    git("clone", "-q", "--bare", str(recordings), str(tmp_path / "bare.git"), cwd=tmp_path)
    revision, cassettes = read_source(tmp_path / "bare.git")
    assert len(revision) == 40
    assert cassettes == read_source(recordings)[1]
    with pytest.raises(ValueError, match="no commit 'nope'"):
        read_source(tmp_path / "bare.git", "nope")


def test_every_rule_wording_in_the_record_is_an_emulator_rule() -> None:
    """The committed record (tests/data/calibration.json) names rules the emulators still have."""
    import emulators

    record: dict[str, Any] = json.loads((Path(__file__).parents[1] / "data" / "calibration.json").read_text())
    rules = {rule.id for rule in emulators.all_rules()}
    for tally in record["emulators"].values():
        named = {entry["rule"] for entry in tally["history_4xx_reproduced"]} | set(tally["false_rejections"])
        assert named <= rules
