"""Calibrate the provider emulators (tests/support/emulators/) on pydantic-ai's recorded real API traffic.

pydantic-ai's repository keeps VCR recordings ("cassettes", YAML) of real requests to the providers'
APIs and the real answers. Every request a provider answered 2xx is a history it accepted, so an
emulator that refuses one is stricter than the real service (a false rejection); every real 4xx
that carries the wording of one of the emulators' rules is a history the service refused, which
the emulator must refuse by that rule (reproduced). This program sends each recorded request body,
over HTTP, to the emulator of the API its URL names, and writes what it found as a JSON record
(tests/data/calibration.json; tests/tools/test_calibration_record.py checks it).

Usage, with a local copy of the repository (a checkout, an extracted tree, or a bare git
directory, read at `--rev`); the recordings are read in place, never copied into this repository:

    python tools/calibrate.py PATH [--rev HEAD] [--record tests/data/calibration.json]

Exit status: 0 when no recorded 2xx request is refused and every history 4xx is reproduced, 1
otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import fnmatch
import http.client
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import emulators  # tests/support holds the emulators; they are not part of the package
from emulators import PROVIDER_APIS, Emulator

__all__ = [
    "CASSETTE_FOLDER",
    "Interaction",
    "Target",
    "calibrate",
    "interactions",
    "is_cassette",
    "main",
    "read_source",
    "real_error",
    "target",
]

#: Where pydantic-ai keeps its recordings: YAML files in any `cassettes` folder under tests/.
CASSETTE_FOLDER = "cassettes"
DEFAULT_RECORD = Path(__file__).resolve().parent.parent / "tests" / "data" / "calibration.json"
TIMEOUT = 10.0

#: OpenAI-compatible Chat Completions servers (providers.md: the Chat rules hold for them).
CHAT_COMPATIBLE_HOSTS = (
    "api.groq.com",
    "api.deepseek.com",
    "openrouter.ai",
    "api.cerebras.ai",
    "router.huggingface.co",
    "api.z.ai",
    "ollama.com",
    "api.inference.crusoecloud.com",
    "*.snowflakecomputing.com",
    "generativelanguage.googleapis.com",
    "*.openai.azure.com",
    "us.inference.heroku.com",
)
#: Servers that speak the OpenAI Responses API besides OpenAI's own.
RESPONSES_COMPATIBLE_HOSTS = ("*.openai.azure.com", "api.deepseek.com", "bedrock-mantle.*", "openrouter.ai")

_GEMINI = re.compile(r"/models/[^/:]+:(generateContent|streamGenerateContent)$")
_BEDROCK = re.compile(r"^/model/([^/]+)/(converse|converse-stream)$")

#: Real history errors whose wording no emulator rule carries, with the rule that stands for them:
#: DeepSeek's Responses-compatible server says "tool call" where OpenAI says "function call".
EXTRA_HISTORY_WORDINGS: dict[str, str] = {
    r"No tool output found for tool call \S+\.": "openai-responses.function_call_without_output",
}


@dataclass(frozen=True)
class Target:
    """Where a recorded request goes: the emulated API, the path on the emulator, the real host."""

    api: str
    path: str
    host: str


@dataclass(frozen=True)
class Interaction:
    """One recorded request and the status and error message the real API answered."""

    cassette: str
    index: int
    uri: str
    body: object
    status: int
    error: str


def _host_matches(host: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(host, pattern) for pattern in patterns)


def target(uri: str) -> Target | None:
    """The emulator a recorded request URL belongs to, or None when no emulator covers it."""
    parts = urlsplit(uri)
    host, path, query = parts.hostname or "", parts.path, parts.query
    if host == "api.openai.com" and path == "/v1/chat/completions":
        return Target("openai-chat", path, host)
    if path.endswith("/chat/completions") and _host_matches(host, CHAT_COMPATIBLE_HOSTS):
        return Target("openai-chat", "/v1/chat/completions", host)
    if host == "api.mistral.ai" and path == "/v1/chat/completions":
        return Target("mistral", path, host)
    if (host == "api.openai.com" and path == "/v1/responses") or (
        path.endswith("/responses") and _host_matches(host, RESPONSES_COMPATIBLE_HOSTS)
    ):
        return Target("openai-responses", "/v1/responses", host)
    if host == "api.anthropic.com" and path == "/v1/messages":
        return Target("anthropic", path + (f"?{query}" if query else ""), host)
    gemini_host = host == "generativelanguage.googleapis.com" or host.endswith("aiplatform.googleapis.com")
    if gemini_host and _GEMINI.search(path):  # Vertex AI's path too: the emulator serves it
        return Target("gemini", path + ("?alt=sse" if "alt=sse" in query else ""), host)
    if host.startswith("bedrock-runtime.") and _BEDROCK.match(path):
        return Target("bedrock", path, "bedrock-runtime")
    return None


def real_error(response: Mapping[str, Any]) -> str:
    """The error message in a recorded answer (the providers' shapes), or '' when there is none."""
    payload: object = response.get("parsed_body", response.get("body"))
    if isinstance(payload, Mapping) and isinstance(payload.get("string"), str):
        payload = payload["string"]
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError:
            return payload
    if not isinstance(payload, Mapping):
        return ""
    error = payload.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return error["message"]
    message = payload.get("message")
    return message if isinstance(message, str) else ""


def _request_body(request: Mapping[str, Any]) -> object:
    if "parsed_body" in request:
        return request["parsed_body"]
    body = request.get("body")
    if isinstance(body, Mapping) and "messages" not in body and isinstance(body.get("string"), str):
        body = body["string"]
    if isinstance(body, str):
        try:
            return json.loads(body)
        except ValueError:
            return None
    return body


def interactions(cassette: str, text: str) -> Iterator[Interaction]:
    """Every HTTP interaction recorded in one cassette's YAML (gRPC samples and the like: none)."""
    try:
        loaded = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as error:
        raise ValueError(f"{cassette}: not a readable cassette ({error})") from None
    recorded = loaded.get("interactions") if isinstance(loaded, Mapping) else None
    for index, interaction in enumerate(recorded if isinstance(recorded, list) else []):
        request = interaction.get("request") if isinstance(interaction, Mapping) else None
        response = interaction.get("response") if isinstance(interaction, Mapping) else None
        if not isinstance(request, Mapping) or not isinstance(response, Mapping):
            continue
        status = response.get("status", {})
        code = status.get("code") if isinstance(status, Mapping) else None
        if not isinstance(code, int) or not isinstance(request.get("uri"), str):
            continue
        yield Interaction(cassette, index, request["uri"], _request_body(request), code, real_error(response))


def is_cassette(name: str) -> bool:
    """Whether a repository path is a recording (tests/**/cassettes/**/*.yaml)."""
    folders = name.split("/")[:-1]
    return name.endswith(".yaml") and folders[:1] == ["tests"] and CASSETTE_FOLDER in folders


def read_source(source: Path, rev: str = "HEAD") -> tuple[str, list[tuple[str, str]]]:
    """(what was read, [(cassette path, YAML text)]) from a directory or a bare git directory.

    In a git directory, blobs the copy does not hold (large files a partial copy left out) are
    skipped; the record counts them.
    """
    if not source.is_dir():
        raise ValueError(f"{source} is not a directory (a copy of the pydantic-ai repository)")
    if (source / "objects").is_dir() and (source / "HEAD").is_file():
        return _read_git(source, rev)
    files = sorted(
        str(path.relative_to(source))
        for path in (source / "tests").rglob("*.yaml")
        if is_cassette(str(path.relative_to(source)))
    )
    revision = _git(["git", "-C", str(source), "rev-parse", "HEAD"]) or "unknown (not a git checkout)"
    return revision, [(name, (source / name).read_text(encoding="utf-8")) for name in files]


def _git(command: list[str], stdin: bytes | None = None) -> str:
    done = subprocess.run(command, input=stdin, capture_output=True, timeout=300, check=False)
    return done.stdout.decode().strip() if done.returncode == 0 else ""


def _read_git(git_dir: Path, rev: str) -> tuple[str, list[tuple[str, str]]]:
    commit = _git(["git", "--git-dir", str(git_dir), "rev-parse", "--verify", f"{rev}^{{commit}}"])
    if not commit:
        raise ValueError(f"{git_dir}: no commit {rev!r} in this git directory")
    listing = _git(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", commit, "tests"])
    names = sorted(name for name in listing.splitlines() if is_cassette(name))
    batch = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        input="".join(f"{commit}:{name}\n" for name in names).encode(),
        capture_output=True,
        timeout=300,
        check=True,
    ).stdout
    found: list[tuple[str, str]] = []
    position = 0
    for name in names:
        end = batch.index(b"\n", position)
        header = batch[position:end].split()
        position = end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        found.append((name, batch[position : position + size].decode("utf-8")))
        position += size + 1
    return commit, found


def _wording(template: str) -> re.Pattern[str]:
    """A rule's message as a pattern: its placeholders match anything."""
    pieces = re.split(r"\{[a-z_]+\}", template)
    return re.compile(".+?".join(re.escape(piece) for piece in pieces))


def _history_rule(api: str, message: str) -> str | None:
    """The rule whose wording a real error message carries (None: the error is not about the history)."""
    if not message:
        return None
    for rule in emulators.spec(api).rules:
        if rule.id.endswith(".request_schema"):
            continue  # schema errors are worded in the API's style, not quoted
        if _wording(rule.message).search(message):
            return rule.id
    for wording, rule_id in EXTRA_HISTORY_WORDINGS.items():
        if rule_id.startswith(api + ".") and re.search(wording, message):
            return rule_id
    return None


def _send(emulator: Emulator, path: str, body: object) -> tuple[int, str | None]:
    connection = http.client.HTTPConnection("127.0.0.1", emulator.port, timeout=TIMEOUT)
    try:
        connection.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
    finally:
        connection.close()
    verdict = emulator.last()
    return response.status, verdict.rule


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _empty_tally() -> dict[str, Any]:
    return {
        "requests": 0,
        "real_2xx": 0,
        "accepted": 0,
        "false_rejections": {},
        "history_4xx_reproduced": [],
        "history_4xx_not_reproduced": [],
        "other_4xx": [],
        "not_judged": 0,
        "hosts": Counter(),
    }


def calibrate(revision: str, cassettes: list[tuple[str, str]]) -> dict[str, Any]:
    """Send every recorded request an emulator covers to it; the record of what each one decided."""
    tallies = {api: _empty_tally() for api in PROVIDER_APIS}
    uncovered: Counter[str] = Counter()
    not_json = 0
    unreadable: list[str] = []
    total = 0
    servers = {api: emulators.serve(api, request_timeout=TIMEOUT) for api in PROVIDER_APIS}
    try:
        for cassette, text in cassettes:
            try:
                recorded = list(interactions(cassette, text))
            except ValueError:
                unreadable.append(cassette)
                continue
            for interaction in recorded:
                total += 1
                where = target(interaction.uri)
                if where is not None and not isinstance(interaction.body, Mapping):
                    not_json += 1  # a body the recording kept as text or bytes
                    continue
                if where is None:
                    parts = urlsplit(interaction.uri)
                    uncovered[f"{parts.hostname}{re.sub(r'/model/[^/]+/', '/model/*/', parts.path)}"] += 1
                    continue
                _judge(tallies[where.api], servers[where.api], where, interaction)
    finally:
        for server in servers.values():
            server.close()
    for tally in tallies.values():
        tally["hosts"] = dict(sorted(tally["hosts"].items()))
        tally["false_rejections"] = dict(sorted(tally["false_rejections"].items()))
    return {
        "source": {
            "repository": "pydantic/pydantic-ai",
            "commit": revision,
            "cassettes": len(cassettes),
            "unreadable": unreadable,
            "interactions": total,
            "covered_but_not_json": not_json,
        },
        "emulators": tallies,
        "not_covered": dict(sorted(uncovered.items(), key=lambda item: (-item[1], item[0]))),
    }


def _judge(tally: dict[str, Any], server: Emulator, where: Target, interaction: Interaction) -> None:
    name = f"{interaction.cassette}#{interaction.index}"
    if not (200 <= interaction.status < 300 or 400 <= interaction.status < 500) or interaction.status == 429:
        tally["not_judged"] += 1  # the real API gave no verdict on the request (rate limit, 5xx, redirect)
        return
    tally["requests"] += 1
    tally["hosts"][where.host] += 1
    status, rule = _send(server, where.path, interaction.body)
    if 200 <= interaction.status < 300:
        tally["real_2xx"] += 1
        if status == 200:
            tally["accepted"] += 1
        else:
            tally["false_rejections"].setdefault(str(rule), []).append(name)
        return
    expected = _history_rule(where.api, interaction.error)
    entry = {"cassette": name, "real": _short(interaction.error), "emulator": rule}
    if expected is None:
        tally["other_4xx"].append(entry)
    elif rule == expected:
        tally["history_4xx_reproduced"].append({**entry, "rule": expected})
    else:
        tally["history_4xx_not_reproduced"].append({**entry, "rule": expected})


def problems(record: Mapping[str, Any]) -> list[str]:
    """What the record shows wrong: false rejections and history 4xx not reproduced, one line each."""
    found = []
    for api, tally in record["emulators"].items():
        for rule, names in tally["false_rejections"].items():
            found.append(f"{api}: {rule} refused {len(names)} request(s) the real API accepted: {names[0]}")
        for entry in tally["history_4xx_not_reproduced"]:
            found.append(
                f"{api}: {entry['cassette']} was refused by {entry['rule']}, the emulator said {entry['emulator']}"
            )
    return found


def summary(record: Mapping[str, Any]) -> str:
    """One line per emulator: requests, accepted of real 2xx, false rejections, history 4xx."""
    lines = []
    for api, tally in record["emulators"].items():
        false = sum(len(names) for names in tally["false_rejections"].values())
        reproduced = len(tally["history_4xx_reproduced"])
        history = reproduced + len(tally["history_4xx_not_reproduced"])
        lines.append(
            f"{api}: {tally['requests']} requests, {tally['accepted']}/{tally['real_2xx']} real 2xx accepted, "
            f"{false} false rejections, {reproduced}/{history} history 4xx reproduced, "
            f"{len(tally['other_4xx'])} other 4xx"
        )
    uncovered = sum(record["not_covered"].values())
    lines.append(
        f"not covered by an emulator: {uncovered} of {record['source']['interactions']} interactions"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "source", type=Path, help="a copy of the pydantic-ai repository (or its git directory)"
    )
    parser.add_argument("--rev", default="HEAD", help="the commit to read in a git directory (default HEAD)")
    parser.add_argument("--record", type=Path, default=DEFAULT_RECORD, help="where to write the JSON record")
    args = parser.parse_args(argv)
    try:
        revision, cassettes = read_source(args.source, args.rev)
    except ValueError as error:
        print(f"calibrate: {error}", file=sys.stderr)
        return 2
    if not cassettes:
        print(f"calibrate: no cassettes under {args.source}/tests", file=sys.stderr)
        return 2
    record = calibrate(revision, cassettes)
    args.record.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(summary(record))
    found = problems(record)
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
