"""`histfix scan SOURCE --against R` for real: stores checked on other releases' environments.

Release-independent, so the `tools` session runs these once, on the newest release, like
test_compare_envs.py, whose environment cache (.nox/_compare_envs) and wheelhouse they share:
the releases checked against (1.0.0, 1.107.10, 2.9.1 and the newest) each run in the environment
`histfix compare` builds for them, so what the session itself has installed is only release A.
The faults (a release that does not import, a probe that stops or hangs) use stand-in
environments in a temporary cache and run wherever these tests run.
"""

from __future__ import annotations

import base64
import io
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import histfix
from histfix._cli.commands import main
from histfix._compare import environments as _compare
from histfix._compare.probe import PLAIN
from histfix._compare.probe import REPAIRED as HISTFIX
from histfix._release.pinned import NEWEST, release_requirements
from histfix.store import open_source
from histfix.upgrade import PairRecord, UpgradeCheck, check_upgrade
from histfix.upgrade import _check as upgrade_check
from histfix.upgrade._pairs import pair

from release_envs import WHEELHOUSE, offline, uv_or_none
from store_cases import EXAMPLES, histories, write_directory, write_jsonl, write_sqlite

ROOT = Path(__file__).parent.parent.parent
CACHE = ROOT / ".nox" / "_compare_envs"
AGAINST = ["1.0.0", "1.107.10", "2.9.1", NEWEST]
#: The key of the history the issue measured: 2.68.0's repair output, with a synthesized return
#: outcome='interrupted', which 1.107.10's own loader refuses while histfix.load_json loads it.
REPAIRED_KEY = "newest-repair-of-aborted_mid_tool"
#: The histories the four store kinds hold (besides the values that are no history).
FEW = ["example-aborted_mid_tool", "example-cancelled_stream", "example-trimmed_slice", REPAIRED_KEY]


def stored() -> dict[str, bytes]:
    """The store's histories: the corpus, the examples, values that are no history, and what the
    installed release's repair writes for aborted_mid_tool (the rolling-upgrade case)."""
    found = histories()
    aborted = histfix.load_json((EXAMPLES / "aborted_mid_tool.json").read_bytes())
    found[REPAIRED_KEY] = histfix.dump_json(histfix.repair(aborted))
    return found


def settings(cache: Path = CACHE) -> _compare.Settings:
    return _compare.Settings(uv=uv_or_none() or "uv", cache=cache, find_links=WHEELHOUSE)


#: check_upgrade's options for the shared environment cache, offline.
OFFLINE = {"cache": CACHE, "find_links": WHEELHOUSE}


_COMPARE_EACH = """
import base64, json, sys
from histfix._compare.probe import PLAIN, REPAIRED, probe, prompt_for
from histfix._compare.outcome import Outcome
said = {}
for key, encoded in json.load(sys.stdin):
    raw = base64.b64decode(encoded)
    observation = probe(raw, prompt_for(json.loads(raw), None))
    said[key] = {side: {"summary": Outcome.of(observation, side).summary(side),
                        "raised": observation[side]["raised"]} for side in (PLAIN, REPAIRED)}
print(json.dumps(said))
"""


def compare_says(histories_: dict[str, bytes], scratch: Path) -> dict[str, dict[str, Any]]:
    """What `histfix compare` says of each history on each of AGAINST: its own probe and summary, in
    each release's environment, one process per release for all the histories, side by side (a
    process per history and release, as the command runs, would take minutes; the command itself
    is run on one history below, to tie the two)."""
    path_entry = _compare.histfix_on_a_path(scratch)
    variables = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    variables["PYTHONPATH"] = str(path_entry)
    items = json.dumps([[key, base64.b64encode(raw).decode()] for key, raw in histories_.items()])
    running = {}
    for release in AGAINST:
        env, _ = _compare.environment(release, settings())
        python = str(_compare.python_in(env))
        running[release] = subprocess.Popen(
            [python, "-c", _COMPARE_EACH],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=variables,
            text=True,
        )
    said = {}
    for release, process in running.items():
        out, _ = process.communicate(items, timeout=600)
        assert process.returncode == 0, release
        said[release] = json.loads(out)
    return said


@pytest.fixture(scope="module")
def check() -> Iterator[UpgradeCheck]:
    """One set of probes (one process per release) for every store these tests check."""
    with UpgradeCheck(AGAINST, **OFFLINE) as started:
        assert started.failed == {}
        yield started


@pytest.fixture(scope="module")
def corpus_scan(
    check: UpgradeCheck, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, dict[str, Any]]]:
    """The --jsonl records of the four releases over a SQLite store of `stored()`, by release and key."""
    folder = tmp_path_factory.mktemp("corpus")
    url = write_sqlite(folder / "chats.db", stored())
    found: dict[str, dict[str, dict[str, Any]]] = {release: {} for release in AGAINST}
    with open_source(url) as source:
        result = check.run(source, on_record=lambda r: found[r.release].__setitem__(r.key, r.as_json()))
    assert result.failed == {} and result.breaking > 0  # the newest repair's output breaks on 1.x
    return found


@offline
def test_findings_match_what_compare_says_history_by_history(
    corpus_scan: dict[str, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    assert list(corpus_scan) == AGAINST
    histories_ = {k: v for k, v in stored().items() if not k.startswith("bad-")}  # compare takes histories
    said_by_release = compare_says(histories_, tmp_path)
    for release, said in said_by_release.items():
        records = corpus_scan[release]
        assert set(records) == set(stored()) | {"bad-null"}  # and the NULL row write_sqlite adds
        for key, compared in said.items():
            on_b = records[key]["on_b"]
            assert on_b["sends"] == compared[PLAIN]["summary"], (release, key)
            assert on_b["returns"] == compared[HISTFIX]["summary"], (release, key)
            # compare's run starts from pydantic-ai's own loader, its repair from histfix.load_json
            refused = "cannot load the history"
            assert (on_b["loads"] is not None) == str(compared[PLAIN]["raised"]).startswith(refused)
            assert (on_b["load_json"] is not None) == str(compared[HISTFIX]["raised"]).startswith(refused)
        if release == NEWEST:  # the installed release is A too: both sides agree, nothing breaks
            for record in records.values():
                against = ("loads_other_repair", "repair_differs", "upstream_repair_differs")
                on_b = {k: v for k, v in record["on_b"].items() if k not in against}
                # the same release repairs alike: nothing written otherwise
                assert not record["on_b"].get("repair_differs"), record["key"]
                assert not record["on_b"].get("upstream_repair_differs"), record["key"]
                assert record["on_a"] == on_b, record["key"]
            assert not any(r["breaks"] for r in records.values())


@offline
def test_compare_itself_says_the_same_of_the_measured_history(
    corpus_scan: dict[str, dict[str, dict[str, Any]]], tmp_path: Path
) -> None:
    path = tmp_path / "repaired.json"
    path.write_bytes(stored()[REPAIRED_KEY])
    command = [
        sys.executable,
        "-m",
        "histfix",
        "compare",
        str(path),
        "--json",
        "--releases",
        ",".join(AGAINST),
    ]
    done = subprocess.run(
        [*command, "--find-links", str(WHEELHOUSE), "--cache-dir", str(CACHE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    for entry in json.loads(done.stdout)["releases"]:
        on_b = corpus_scan[entry["release"]][REPAIRED_KEY]["on_b"]
        assert (on_b["sends"], on_b["returns"]) == (entry[PLAIN]["summary"], entry[HISTFIX]["summary"])


@offline
def test_the_measured_rolling_upgrade_case_shows_up(
    corpus_scan: dict[str, dict[str, dict[str, Any]]],
) -> None:
    record = corpus_scan["1.107.10"][REPAIRED_KEY]
    assert record["on_a"]["loads"] is None
    assert record["on_b"]["load_json"] is None  # histfix.load_json loads it on 1.107.10
    assert record["on_b"]["loads"].startswith("2.request.parts.0.tool-return.outcome: Input should be")
    assert set(record["breaks"]) >= {"loads", "sends"} and "load_json" not in record["breaks"]
    assert "'interrupted'" not in record["breaks"]["loads"] and "outcome" in record["breaks"]["loads"]
    # and the other direction of the same fact: what the newest repair would write for the original
    original = corpus_scan["1.107.10"]["example-aborted_mid_tool"]
    assert original["on_a"]["changes"] == {"synthesized_return": 1}
    assert "outcome: Input should be" in original["breaks"]["repair_output"]
    # 1.0.0 ignores the field: it loads, and the round trip back to the newest loses it
    old = corpus_scan["1.0.0"][REPAIRED_KEY]
    assert old["on_b"]["loads"] is None and "loads" not in old["breaks"]
    assert old["round_trip"]["lost_paths"] == ["[2].parts[0].outcome"]
    # values that are no history: not loaded on either side, never a break
    for release in AGAINST:
        for key in ("bad-truncated", "bad-number", "bad-utf8", "bad-not-a-history", "bad-null"):
            bad = corpus_scan[release][key]
            assert bad["on_a"]["loads"] is not None and bad["on_b"]["loads"] is not None and not bad["breaks"]


_PROVE_IN_B = """
import base64, json, sys
from pydantic_ai.messages import ModelMessagesTypeAdapter
from histfix.upgrade._fields import TripProof, field_table
a_fields, items = json.load(sys.stdin)
proof = TripProof(a_fields, field_table())
walked = TripProof(a_fields, field_table())
walked._plainly_lossless = lambda *args: False  # the walk alone, value by value
said = {}
for key, (encoded, translated) in items.items():
    raw = base64.b64decode(encoded)
    try:
        loaded = ModelMessagesTypeAdapter.validate_json(raw)
    except Exception:
        continue
    dumped = ModelMessagesTypeAdapter.dump_json(loaded)
    lost = proof.losses(json.loads(raw), loaded, translated)
    if lost != walked.losses(json.loads(raw), loaded, translated):
        raise SystemExit(f"{key}: the proof a list at a time says otherwise than the walk")
    said[key] = [lost == [], base64.b64encode(dumped).decode()]
print(json.dumps(said))
"""


def proof_histories() -> dict[str, bytes]:
    """The store's histories, and finished conversations as stored and as this release dumps them
    (every field written out, as an application that saves ``all_messages_json()`` stores them)."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from generate import random_conversation

    found = {key: raw for key, raw in stored().items() if not key.startswith("bad-")}
    for seed in range(30):
        raw = json.dumps(random_conversation(seed)).encode()
        found[f"conversation-{seed}"] = raw
        found[f"dumped-{seed}"] = ModelMessagesTypeAdapter.dump_json(
            ModelMessagesTypeAdapter.validate_json(raw)
        )
    return found


@offline
def test_every_round_trip_a_probe_proves_lossless_loses_nothing_for_real(tmp_path: Path) -> None:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from histfix.upgrade._fields import field_table, translated_parts
    from histfix.upgrade._trip import LOSSLESS, round_trip

    found = proof_histories()
    items = {}
    for key, raw in found.items():
        try:
            loaded = ModelMessagesTypeAdapter.validate_json(raw)
        except ValueError:
            continue
        items[key] = [base64.b64encode(raw).decode(), translated_parts(json.loads(raw), loaded)]
    path_entry = _compare.histfix_on_a_path(tmp_path)
    variables = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    variables["PYTHONPATH"] = str(path_entry)
    for release in AGAINST:
        env, _ = _compare.environment(release, settings())
        done = subprocess.run(
            [str(_compare.python_in(env)), "-c", _PROVE_IN_B],
            input=json.dumps([field_table(), items]),
            capture_output=True,
            text=True,
            env=variables,
            timeout=600,
            check=True,
        )
        said = json.loads(done.stdout)
        proven = [key for key, (lossless, _) in said.items() if lossless]
        for key in proven:
            assert round_trip(found[key], base64.b64decode(said[key][1])) == LOSSLESS, (release, key)
        # not a proof that never fires: the finished conversations, as stored, all pass
        conversations = [key for key in said if key.startswith("conversation-")]
        assert set(conversations) <= set(proven), release


def _kind_store(kind: str, folder: Path, request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    """A store of FEW and the values that are no history, in ``kind``; its URL and key -> corpus key."""
    chosen = {k: v for k, v in stored().items() if k in FEW or k.startswith("bad-")}
    folder.mkdir()
    if kind == "dir":
        write_directory(folder, chosen)
        return str(folder), {
            path.relative_to(folder).as_posix(): path.stem for path in folder.rglob("*.json")
        }
    if kind == "jsonl":
        write_jsonl(folder / "chats.jsonl", chosen)
        return str(folder / "chats.jsonl"), {key: key for key in FEW}
    if kind == "sqlite":
        return write_sqlite(folder / "chats.db", chosen, blob=True), {key: key for key in chosen}
    server = request.getfixturevalue("pg_server")
    rows = [(key, chosen[key].decode()) for key in FEW] + [("bad-null", None)]
    table = server.make_table("jsonb", rows, key_type="text")
    return server.url(table), {key: key for key, _ in rows}


@offline
@pytest.mark.parametrize("kind", ["dir", "jsonl", "sqlite", "postgresql"])
def test_every_store_kind_gives_the_same_findings(
    kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    check: UpgradeCheck,
    corpus_scan: dict[str, dict[str, dict[str, Any]]],
) -> None:
    url, keys = _kind_store(kind, tmp_path / "store", request)
    seen: list[PairRecord] = []
    with open_source(url) as source:
        result = check.run(source, on_record=seen.append, batch_size=3)
    assert result.failed == {} and result.release_a == NEWEST
    assert {r.release for r in seen} == set(AGAINST)
    mapped = {(keys[r.key], r.release): r.as_json() for r in seen if r.key in keys}
    assert {key for key, _ in mapped} >= set(FEW)
    for (key, release), record in mapped.items():
        expected = corpus_scan[release][key]
        if key.startswith("bad-"):  # the reasons differ by store (a JSONL line, a NULL column)
            assert not record["breaks"] and record["on_b"]["loads"] is not None
            continue
        assert record["breaks"] == expected["breaks"], (kind, key, release)
        assert record["on_b"] == expected["on_b"] and record["round_trip"] == expected["round_trip"]
    assert result.releases["1.107.10"].breaks["loads"] == 1  # REPAIRED_KEY, in every kind


# --- pause marks and bookkeeping: 2.68.0 (the last release of the old merge rule) against 2.78.0 -------

#: The releases on either side of the merge rule for pause marks (2.78.0: kept only when every
#: merged request had it), each checked against the other, both ways.
PAUSE_RELEASES = ("2.68.0", "2.78.0")
PAUSED = {"__pydantic_ai__": {"deferred_pause": True}}


def pause_histories() -> dict[str, bytes]:
    """A pause answered by a new prompt (the mark merged away on 2.78.0, kept before), the
    opposite order, both requests marked, a mark alone, and a plain exchange."""
    from dsl import call, req, resp, ret, text, to_json, user

    paused = [req(user("clean up", at=1)), resp(call("list", "c1"), call("delete", "c2"), at=2)]
    answer = req(ret("list", "c1", "a b", at=3), metadata=PAUSED)
    return {
        "pause-then-prompt": to_json([*paused, answer, req(user("Actually, never mind.", at=4))]),
        "prompt-then-pause": to_json(
            [*paused, req(ret("list", "c1", "a b", at=3)), req(user("x", at=4), metadata=PAUSED)]
        ),
        "pause-both": to_json([*paused, answer, req(user("more", at=4), metadata=PAUSED)]),
        "pause-alone": to_json([*paused, answer]),
        "plain": to_json([req(user("hi", at=1)), resp(text("hello"), at=2)]),
    }


_ORDINARY = """
import json
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel


def model(messages, info):
    asked = len(messages) % 4 == 1
    return ModelResponse(parts=[ToolCallPart("lookup", {"q": "x"})] if asked else [TextPart("done")])


agent = Agent(FunctionModel(model))


@agent.tool_plain
def lookup(q: str) -> str:
    return "found"


found, history = {}, []
for turn in range(3):
    result = agent.run_sync(f"question {turn}", message_history=history)
    history = result.all_messages()
    found[f"ordinary-{turn}"] = result.all_messages_json().decode()
print(json.dumps(found))
"""


@cache  # an Agent run in 2.78.0's environment, the same for every store kind and direction
def ordinary_histories() -> dict[str, bytes]:
    """Histories as 2.78.0's own Agent writes them (a tool call, then an answer): every response
    carries request_timestamp and duration, which 2.68.0 has no field for."""
    env, _ = _compare.environment("2.78.0", settings())
    done = subprocess.run(
        [str(_compare.python_in(env)), "-c", _ORDINARY],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return {key: value.encode() for key, value in json.loads(done.stdout).items()}


def _other_pause_release() -> str | None:
    if NEWEST not in PAUSE_RELEASES:
        return None
    other = next(release for release in PAUSE_RELEASES if release != NEWEST)
    return other if any(WHEELHOUSE.glob(f"pydantic_ai_slim-{other}-*.whl")) else None


pause_pair = pytest.mark.skipif(
    _other_pause_release() is None,
    reason=f"needs {' and '.join(PAUSE_RELEASES)}: one installed (the newest pinned), the other in the wheelhouse",
)


def _assert_pause_findings(records: dict[str, dict[str, Any]], a: str, b: str) -> None:
    mark = "[2].metadata.__pydantic_ai__.deferred_pause"
    for key in ("pause-then-prompt", "prompt-then-pause"):
        # pydantic-ai's own repair keeps the merged mark on 2.68.0 only; histfix's gives 2.78.0's
        # result on both (its promise), so what histfix writes is no break
        breaks = records[key]["breaks"]
        assert set(breaks) == {"upstream_repair"}, (a, b, key, breaks)
        assert breaks["upstream_repair"].endswith(f"in 1 value(s) that change behaviour: {mark}")
        assert records[key]["on_b"]["repair_differs"] is None
    for key in ("pause-both", "pause-alone", "plain"):
        assert not records[key]["breaks"], (a, b, key)
    for key, record in records.items():
        if key.startswith("ordinary-"):  # what the Agent wrote: bookkeeping lost at most
            assert not record["breaks"] and record["round_trip"]["lost"] == 0, (a, b, key)
    if a == "2.78.0":
        trip = records["ordinary-2"]["round_trip"]
        assert trip["bookkeeping"] > 0 and "[1].request_timestamp" in trip["bookkeeping_paths"]


@offline
@pause_pair
@pytest.mark.parametrize("kind", ["dir", "jsonl", "sqlite", "postgresql"])
def test_pause_marks_merged_otherwise_break_and_bookkeeping_does_not_from_the_installed_release(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    other = _other_pause_release()
    assert other is not None
    chosen = {**pause_histories(), **ordinary_histories()}
    url, keys = _store_of(kind, chosen, tmp_path / "store", request)
    found: dict[str, dict[str, Any]] = {}
    with open_source(url) as source:
        result = check_upgrade(
            source, [other], **OFFLINE, on_record=lambda r: found.__setitem__(keys[r.key], r.as_json())
        )
    assert not result.failed
    _assert_pause_findings(found, NEWEST, other)


def _release_env(release: str, folder: Path) -> Path:
    """A virtualenv of ``release`` with what the command needs for every store kind, from the wheelhouse."""
    uv = uv_or_none() or "uv"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(folder)], check=True, timeout=120)
    requirements = [*release_requirements(release, "packaging"), "psycopg[binary]"]
    install = [uv, "pip", "install", "--quiet", "--python", str(_compare.python_in(folder))]
    subprocess.run(
        [*install, "--no-index", "--find-links", str(WHEELHOUSE), *requirements], check=True, timeout=600
    )
    return _compare.python_in(folder)


@offline
@pause_pair
def test_pause_marks_merged_otherwise_break_and_bookkeeping_does_not_from_the_other_release(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    other = _other_pause_release()
    assert other is not None
    python = _release_env(other, tmp_path / "env")
    path_entry = _compare.histfix_on_a_path(tmp_path / "path")
    variables = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    variables |= {"PYTHONPATH": str(path_entry), "HISTFIX_UV": uv_or_none() or "uv"}
    chosen = {**pause_histories(), **ordinary_histories()}
    # one store kind: the direction is what this adds to the test above, which runs every kind
    for kind in ("jsonl",):
        url, keys = _store_of(kind, chosen, tmp_path / kind, request)
        command = [str(python), "-m", "histfix", "scan", url, "--against", NEWEST, "--jsonl"]
        command += ["--cache-dir", str(CACHE), "--find-links", str(WHEELHOUSE)]
        done = subprocess.run(
            command, capture_output=True, text=True, env=variables, timeout=900, check=False
        )
        assert done.returncode == 1 and done.stderr == "", (kind, done.stderr)
        found = {keys[record["key"]]: record for record in map(json.loads, done.stdout.splitlines())}
        _assert_pause_findings(found, other, NEWEST)


def _store_of(
    kind: str, chosen: dict[str, bytes], folder: Path, request: pytest.FixtureRequest
) -> tuple[str, dict[str, str]]:
    """``chosen`` in a store of ``kind``: its URL and store key -> key of ``chosen``."""
    folder.mkdir(parents=True)
    if kind == "dir":
        write_directory(folder, chosen)
        return str(folder), {
            path.relative_to(folder).as_posix(): path.stem for path in folder.rglob("*.json")
        }
    if kind == "jsonl":
        write_jsonl(folder / "chats.jsonl", chosen)
        return str(folder / "chats.jsonl"), {key: key for key in chosen}
    if kind == "sqlite":
        return write_sqlite(folder / "chats.db", chosen, blob=True), {
            key: key for key in [*chosen, "bad-null"]
        }
    server = request.getfixturevalue("pg_server")
    table = server.make_table("jsonb", [(key, raw.decode()) for key, raw in chosen.items()], key_type="text")
    return server.url(table), {key: key for key in chosen}


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@offline
def test_a_release_that_cannot_be_installed_is_one_line_and_the_others_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("tqdm")
    folder = write_directory(tmp_path / "chats", {key: stored()[key] for key in FEW})
    argv = ["scan", str(folder), "--against", f"2.9.2,{NEWEST}", "--find-links", str(WHEELHOUSE)]
    argv += ["--cache-dir", str(CACHE)]
    assert main(argv) == 2  # an answer without 2.9.2 is incomplete
    out, err = capsys.readouterr()
    assert err.count("\n") == 1  # not a terminal: no bars, only the one line
    assert err.startswith("histfix: --against 2.9.2: cannot install pydantic-ai-slim==2.9.2 from ")
    assert err.endswith("; the other releases go on\n")
    assert f"{NEWEST} -> {NEWEST}: 0 of 4 histories would break" in out
    assert f"{NEWEST} -> 2.9.2: not checked: cannot install" in out
    assert not (CACHE / "2.9.2").exists()

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["scan", str(folder), "--against", NEWEST, "--cache-dir", str(CACHE)]) == 0
    assert f"{NEWEST}: 100%" in terminal.getvalue() and "4/4" in terminal.getvalue()


# --- faults, with stand-in environments (no wheelhouse needed) ----------------------------------------


def stand_in(cache: Path, release: str, script: str) -> None:
    """A cached "environment" for ``release`` whose python runs ``script`` (a shell script body)."""
    folder = cache / release
    (folder / "bin").mkdir(parents=True)
    wanted = {
        "python": f"{sys.base_prefix} {sys.version}",
        "requirements": release_requirements(release, "packaging"),
    }
    (folder / "histfix-compare.json").write_text(json.dumps(wanted))
    python = folder / "bin" / "python"
    python.write_text(f"#!/bin/sh\n{script}\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)


#: A stand-in probe: the installed release's own probe, saying it runs RELEASE, which after
#: answering AFTER requests (the set-up is the first) stops (``dies``) or never answers (``hangs``).
STAND_IN = """
import sys, time
from histfix.upgrade import _probe, _side

release, after, then = sys.argv[1], int(sys.argv[2]), sys.argv[3]
hello, answer = _side.ReleaseSide.hello, _side.ReleaseSide.answer
answered = []


def answering(self, header, blobs):
    if len(answered) == after:
        if then == "dies":
            sys.exit("killed by the test")
        time.sleep(120)
    answered.append(header)
    return answer(self, header, blobs)


_side.ReleaseSide.hello = lambda self: {**hello(self), "release": release}
_side.ReleaseSide.answer = answering
sys.exit(_probe.main())
"""


def posing(release: str, after: int = -1, then: str = "answers") -> str:
    """A stand-in's shell script body: the installed release's probe, posing as ``release``."""
    return f"exec {sys.executable} -c '{STAND_IN}' {release} {after} {then}"


def run_with_stand_ins(tmp_path: Path, scripts: dict[str, str], **options: Any) -> tuple[Any, list[Any]]:
    cache = tmp_path / "cache"
    for release, script in scripts.items():
        stand_in(cache, release, script)
    folder = write_directory(tmp_path / "chats", {key: stored()[key] for key in FEW[:3]})
    said: list[tuple[str, str | None]] = []
    seen: list[PairRecord] = []
    with open_source(str(folder)) as source:
        result = check_upgrade(
            source,
            list(scripts),
            cache=cache,
            uv="uv-not-needed",
            on_release=lambda release, why: said.append((release, why)),
            on_record=seen.append,
            **{"batch_size": 1, **options},
        )
    return result, said


def test_a_release_that_does_not_import_is_one_line_and_the_others_go_on(tmp_path: Path) -> None:
    broken = "echo \"ModuleNotFoundError: No module named 'pydantic_ai'\" >&2; exit 1"
    # the other release answers as a probe does (the installed pydantic-ai, saying it is 2.9.1)
    result, said = run_with_stand_ins(tmp_path, {"1.0.0": broken, "2.9.1": posing("2.9.1")})
    assert said[0] == (
        "1.0.0",
        "the probe stopped (exit status 1): ModuleNotFoundError: No module named 'pydantic_ai'",
    )
    assert said[1] == ("2.9.1", None)
    assert result.failed == {"1.0.0": said[0][1]}
    assert result.releases["2.9.1"].histories == 3


def test_a_probe_that_stops_or_hangs_as_it_starts_is_one_line(tmp_path: Path) -> None:
    scripts = {
        "1.0.0": posing("1.0.0", 0, "dies"),
        "2.9.1": posing("2.9.1", 0, "hangs"),
        "2.0.0": posing("2.10.0"),  # says it is 2.10.0: a wrong environment
    }
    result, said = run_with_stand_ins(tmp_path, scripts, timeout=3)
    reasons = dict(said)
    assert reasons["2.0.0"] == "its environment runs pydantic-ai-slim 2.10.0"
    assert reasons["1.0.0"] == "the probe stopped (exit status 1): killed by the test"
    assert reasons["2.9.1"] == "the probe gave no answer to set up in 3 s"
    assert result.releases["1.0.0"].histories == 0 and set(result.failed) == {"1.0.0", "2.9.1", "2.0.0"}


def test_a_probe_that_stops_or_hangs_mid_store_is_given_up_from_that_batch_on(tmp_path: Path) -> None:
    # each answers its set-up and the first batch, and stops (or hangs) on the second
    scripts = {"1.0.0": posing("1.0.0", 2, "dies"), "2.9.1": posing("2.9.1", 2, "hangs")}
    result, said = run_with_stand_ins(tmp_path, scripts, timeout=3)
    reasons = dict(said)
    first = min(
        path.relative_to(tmp_path / "chats").as_posix() for path in (tmp_path / "chats").rglob("*.json")
    )
    assert (
        reasons["1.0.0"]
        == "the probe stopped (exit status 1): killed by the test; from there on, not checked"
    )
    assert reasons["2.9.1"] == (
        f"the probe gave no answer on the batch after {first!r} in 3 s; from there on, not checked"
    )
    for release in scripts:  # the first batch, answered before it stopped, is reported
        assert result.releases[release].histories == 1
        assert result.releases[release].failed == reasons[release]


def test_a_batch_whose_later_piece_fails_is_not_checked_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one batch of three in pieces of one: the stand-in answers its set-up and the first piece
    monkeypatch.setattr(upgrade_check, "PIECE", 1)
    result, said = run_with_stand_ins(tmp_path, {"2.9.1": posing("2.9.1", 2, "dies")}, batch_size=3)
    reason = "the probe stopped (exit status 1): killed by the test; from there on, not checked"
    assert said == [("2.9.1", None), ("2.9.1", reason)]
    assert result.releases["2.9.1"].histories == 0  # as when the batch went whole
    assert result.releases["2.9.1"].failed == reason


def test_more_jobs_give_the_same_records_and_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    for release in ("1.107.10", "2.9.1"):  # the installed release, posing as each (no environment to build)
        stand_in(cache, release, posing(release))
    # 30 corpus histories and every other kind of value: five batches of 7 for each release, so
    # three jobs interleave them
    chosen = {k: v for i, (k, v) in enumerate(stored().items()) if i < 30 or not k.startswith("corpus-")}
    url = write_sqlite(tmp_path / "chats.db", chosen)
    found = {}
    whole = upgrade_check.PIECE
    for jobs, piece in ((1, whole), (3, whole), (1, 2)):
        monkeypatch.setattr(upgrade_check, "PIECE", piece)  # a batch of 7 in four pieces, or whole
        records: list[Any] = []
        with open_source(url) as source:
            result = check_upgrade(
                source,
                ["2.9.1", "1.107.10"],
                cache=cache,
                uv="uv-not-needed",
                jobs=jobs,
                batch_size=7,
                on_record=lambda record, seen=records: seen.append(record.as_json()),
            )
        found[jobs, piece] = (
            records,
            {release: vars(summary) for release, summary in result.releases.items()},
        )
    assert found[3, whole] == found[1, 2] == found[1, whole]
    records, summaries = found[1, whole]
    assert [record["b"] for record in records[:7]] == ["1.107.10"] * 7  # batch by batch, release by release
    assert summaries["2.9.1"]["histories"] == len(chosen) + 1  # and the NULL row


def test_each_release_has_its_own_progress_bar_counting_histories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tqdm")
    cache = tmp_path / "cache"
    for release in ("1.107.10", "2.9.1"):
        stand_in(cache, release, posing(release))
    folder = write_directory(tmp_path / "chats", {key: stored()[key] for key in FEW})
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("HISTFIX_UV", "uv-not-needed")
    argv = [
        "scan",
        str(folder),
        "--against",
        "2.9.1,1.107.10",
        "--cache-dir",
        str(cache),
        "--batch-size",
        "1",
    ]
    assert main([*argv, "--jobs", "2"]) in (0, 1)
    shown = terminal.getvalue()
    for release in ("1.107.10", "2.9.1"):
        assert f"{release}: 100%" in shown and "4/4 [" in shown


def test_jsonl_into_a_pipe_closed_early_ends_quietly(tmp_path: Path) -> None:
    stand_in(tmp_path / "cache", "2.9.1", posing("2.9.1"))
    folder = write_directory(
        tmp_path / "chats", {f"h{n:03d}": b"42" for n in range(150)}
    )  # > a pipe's buffer
    command = [sys.executable, "-m", "histfix", "scan", str(folder), "--against", "2.9.1", "--jsonl"]
    variables = {**os.environ, "HISTFIX_UV": "uv-not-needed", "PYTHONPATH": str(ROOT / "src")}
    with subprocess.Popen(
        [*command, "--cache-dir", str(tmp_path / "cache")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=variables,
    ) as scan_:
        assert scan_.stdout is not None and scan_.stderr is not None
        assert json.loads(scan_.stdout.readline())["b"] == "2.9.1"
        scan_.stdout.close()  # as `| head -1` does
        assert scan_.wait(timeout=300) == 141
        assert scan_.stderr.read() == b""  # no traceback


def test_provider_verdicts_come_from_the_release_side_that_sends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a stand-in "2.9.1" that is the installed release: both sides must agree, provider included
    stand_in(tmp_path / "cache", "2.9.1", posing("2.9.1"))
    chosen = ["corpus-021-E_duplicate_ids_one_return", "example-aborted_mid_tool"]
    folder = write_directory(tmp_path / "chats", {key: stored()[key] for key in chosen})
    monkeypatch.setenv("HISTFIX_UV", "uv-not-needed")
    argv = ["scan", str(folder), "--against", "2.9.1", "--provider", "anthropic", "--jsonl"]
    assert main([*argv, "--cache-dir", str(tmp_path / "cache")]) == 0
    records = {Path(r["key"]).stem: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    duplicate = records[chosen[0]]
    # (what else the provider rejects in what is sent depends on the release: 1.x sends open calls)
    assert "reused_call_id" in duplicate["on_b"]["provider_rejects"]
    for record in records.values():
        assert record["on_a"]["provider_rejects"] == record["on_b"]["provider_rejects"]
        assert not record["breaks"]

    accepted = {"loads": None, "load_json": None, "sends": "sends 5 messages · valid", "returns": "x"}
    accepted |= {"sent_problems": [], "provider_rejects": []}
    rejected = {**accepted, "provider_rejects": ["reused_call_id"]}
    record = pair("k", "2.68.0", "1.107.10", a=accepted, b=rejected, trip=None)
    assert record.breaks == {
        "sends": "on 1.107.10 a plain Agent sends 5 messages · valid; the provider rejects reused_call_id "
        "(on 2.68.0: sends 5 messages · valid)"
    }
    assert pair("k", "2.68.0", "1.107.10", a=rejected, b=rejected, trip=None).breaks == {}


# --- bad input on the command line (no environment is built) -----------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--against", "0.9.0"],
            "histfix: --against: 0.9.0 is older than 1.0.0, the oldest release histfix supports\n",
        ),
        (["--against", "two"], "histfix: --against: 'two' is not a release number (e.g. 2.9.1)\n"),
        (
            ["--against", "2.9.1", "--include-pending"],
            "histfix: --include-pending does not apply with --against\n",
        ),
        (["--cache-dir", "x"], "histfix: --find-links and --cache-dir only apply with --against\n"),
        (
            ["--against", "2.9.1", "--find-links", "nowhere"],
            "histfix: --find-links nowhere: no such folder\n",
        ),
        (["--against", "2.9.1", "--provider", "nope"], "histfix: --provider: ..."),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_directory(tmp_path / "chats", {"a": b"[]"})
    assert main(["scan", str(folder), *extra]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    if message.endswith("..."):
        assert err.startswith(message[:-3]) and err.count("\n") == 1
    else:
        assert err == message


def test_the_api_refuses_a_bad_release_with_a_value_error(tmp_path: Path) -> None:
    folder = write_directory(tmp_path / "chats", {"a": b"[]"})
    with (
        open_source(str(folder)) as source,
        pytest.raises(ValueError, match=r"^against: 'x' is not a release"),
    ):
        check_upgrade(source, ["2.9.1", "x"], uv="uv-not-needed", cache=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()  # refused before any environment


def test_the_checking_process_names_the_installed_release_without_importing_pydantic_ai() -> None:
    # the probes do the work on every release, this process only reads and gathers
    script = (
        "import sys; from histfix.upgrade import UpgradeCheck; "
        "release = UpgradeCheck(['2.9.1'], uv='uv-not-needed').release_a; "
        "imported = 'pydantic_ai' in sys.modules; import histfix; "
        "print(release == histfix.backend_info().version, imported)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]
