"""A pydantic-ai ConversationStore as a store: scan, repair, restore and migrate, on real backends.

The backends: pydantic-ai's InMemoryConversationStore, and the SQLite and PostgreSQL ones of
tests/support/conversation_backends.py (the PostgreSQL one on the server the `stores` session
starts). On a release without ConversationStore every command answers in one line.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from histfix._cli.commands import main

from dsl import call, load, req, resp, ret, text, to_json, user

HAS_STORE = importlib.util.find_spec("pydantic_ai.conversation_store") is not None
needs_store = pytest.mark.skipif(not HAS_STORE, reason="the installed pydantic-ai has no ConversationStore")
SUPPORT = Path(__file__).resolve().parents[1] / "support"
SRC = Path(__file__).resolve().parents[2] / "src"

HEALTHY = [req(user("hi")), resp(text("hello"))]
#: A call the worker crashed in, then another turn: repair puts a result in the middle (a rewrite).
BROKEN = [
    req(user("weather in Paris?")),
    resp(call("get_weather", "c1", {"city": "Paris"})),
    req(user("never mind")),
    resp(text("ok")),
]
#: A run paused for deferred calls: c1 answered, c2 waits (the pause mark on the answering request).
PAUSED_MARK = [
    req(user("do both")),
    resp(call("a", "c1"), call("b", "c2")),
    req(ret("a", "c1"), metadata={"__pydantic_ai__": {"deferred_pause": True}}),
]


@dataclass
class Backend:
    """A backend under test: how the test opens a store on it, and what the command line names."""

    name: str
    open: Callable[[], Awaitable[Any]]
    cli: str
    env: dict[str, str]

    def run(self, work: Callable[[Any], Awaitable[Any]]) -> Any:
        """``work(store)`` on a store of its own, in a loop of its own."""

        async def go() -> Any:
            store = await self.open()
            try:
                return await work(store)
            finally:
                closing = getattr(store, "close", None)
                if closing is not None:
                    done = closing()
                    if done is not None:
                        await done

        return asyncio.run(go())


def _memory() -> Backend:
    import conversation_backends
    from pydantic_ai.conversation_store import InMemoryConversationStore

    store = InMemoryConversationStore()
    conversation_backends.MEMORY = store  # type: ignore[attr-defined]

    async def same() -> Any:
        return store

    return Backend("memory", same, "py:conversation_backends:MEMORY", {})


def _sqlite(tmp_path: Path) -> Backend:
    from conversation_backends import SQLiteConversationStore

    path = str(tmp_path / "conversations.db")

    async def opened() -> Any:
        return SQLiteConversationStore(path)

    return Backend("sqlite", opened, "py:conversation_backends:sqlite_store", {"CONVERSATION_DB": path})


def _postgres(server: Any) -> Backend:
    from conversation_backends import PostgresConversationStore

    conninfo = f"host={server.host} port={server.port} user=postgres dbname=histories connect_timeout=10"
    prefix = f"c_{uuid.uuid4().hex[:10]}"

    async def opened() -> Any:
        return await PostgresConversationStore.connect(conninfo, prefix)

    env = {"CONVERSATION_DB": conninfo, "CONVERSATION_TABLES": prefix}
    return Backend("postgres", opened, "py:conversation_backends:postgres_store", env)


def make_backend(
    name: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Backend:
    if name == "memory":
        backend = _memory()
    elif name == "sqlite":
        backend = _sqlite(tmp_path)
    else:
        backend = _postgres(request.getfixturevalue("pg_server"))
    for key, value in backend.env.items():
        monkeypatch.setenv(key, value)
    return backend


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Backend:
    if not HAS_STORE:
        pytest.skip("the installed pydantic-ai has no ConversationStore")
    return make_backend(request.param, request, tmp_path, monkeypatch)


@pytest.fixture(params=["sqlite", "postgres"])
def sql_backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Backend:
    if not HAS_STORE:
        pytest.skip("the installed pydantic-ai has no ConversationStore")
    return make_backend(request.param, request, tmp_path, monkeypatch)


def save(backend: Backend, conversation_id: str, history: list[Any], **fields: Any) -> None:
    from pydantic_ai.conversation import Conversation

    async def work(store: Any) -> None:
        scope = fields.pop("scope", None)
        await store.save(
            Conversation(messages=load(history), conversation_id=conversation_id, **fields), scope=scope
        )

    backend.run(work)


def loaded(backend: Backend, conversation_id: str) -> Any:
    async def work(store: Any) -> Any:
        return await store.read_record(conversation_id), await store.load(conversation_id)

    return backend.run(work)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def records(out: str) -> dict[str, dict[str, Any]]:
    return {row["key"]: row for row in map(json.loads, out.splitlines())}


def deferred() -> Any:
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.tools import DeferredToolRequests

    return DeferredToolRequests(approvals=[ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="c1")])


# --- scan, repair, restore -------------------------------------------------------------------------


@needs_store
def test_scan_repair_restore_through_the_command_line(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import histfix

    save(backend, "a-healthy", HEALTHY)
    save(backend, "b-broken", BROKEN)
    save(backend, "c-paused", BROKEN, deferred_tool_requests=deferred())
    save(backend, "d-marked", PAUSED_MARK)
    # Workers (fresh interpreters, a second or two each to start) on one backend only: PostgreSQL's,
    # whose factory also gives two connections read side by side.
    jobs = ["--jobs", "2", "--batch-size", "1"] if backend.name == "postgres" else ["--jobs", "1"]
    status, out, _ = cli(capsys, "scan", backend.cli, "--jsonl", *jobs)
    assert status == 1
    actions = {key: row["action"] for key, row in records(out).items()}
    assert actions == {
        "a-healthy": "unchanged",
        "b-broken": "repair",
        "c-paused": "left_pending",
        "d-marked": "left_pending",
    }
    paused_before = loaded(backend, "c-paused")[0]
    marked_before = loaded(backend, "d-marked")[0]
    before = loaded(backend, "b-broken")[0]

    journal = tmp_path / "journal.jsonl"
    status, out, err = cli(capsys, "repair", backend.cli, "--write", "--backup", str(journal))
    assert (status, err) == (0, "")
    assert "repaired 1 conversations; each one's old history stays in the store as a branch" in out
    record, conversation = loaded(backend, "b-broken")
    assert conversation.messages == histfix.repair(load(BROKEN))
    assert record.branches == [before.head_id]  # the old history, kept by the store's own save
    assert record.revision != before.revision
    assert loaded(backend, "c-paused")[0] == paused_before  # exactly as it was
    assert loaded(backend, "d-marked")[0] == marked_before

    status, out, _ = cli(capsys, "repair", backend.cli, "--write", "--backup", str(tmp_path / "again.jsonl"))
    assert status == 0 and "nothing to repair" in out

    status, out, err = cli(capsys, "restore", str(journal), backend.cli)
    assert (status, err) == (0, "")
    assert out == "branched 1 conversations back to their history before the repair\n"
    record, conversation = loaded(backend, "b-broken")
    assert conversation.messages == load(BROKEN)
    assert record.head_id == before.head_id
    status, out, _ = cli(capsys, "restore", str(journal), backend.cli)
    assert status == 0 and "(1 already had it)" in out


@needs_store
def test_include_pending_repairs_a_paused_conversation_and_clears_what_it_waited_on(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import histfix

    backend = make_backend("memory", request, tmp_path, monkeypatch)
    save(backend, "c-paused", BROKEN, deferred_tool_requests=deferred())
    journal = str(tmp_path / "j.jsonl")
    status, _, _ = cli(capsys, "repair", backend.cli, "--include-pending", "--write", "--backup", journal)
    assert status == 0
    record, conversation = loaded(backend, "c-paused")
    assert conversation.messages == histfix.repair(load(BROKEN))
    assert record.deferred_tool_requests is None


class Delegating:
    """A ConversationStore over another: each primitive passes through, with hooks for the faults."""

    def __new__(cls, inner: Any, **hooks: Any) -> Any:
        from pydantic_ai.conversation_store import ConversationStore

        class Over(ConversationStore):
            async def read_record(self, conversation_id: str) -> Any:
                return await inner.read_record(conversation_id)

            async def read_records(self, *, scope: str | None = None, limit: int | None = None) -> Any:
                return await inner.read_records(scope=scope, limit=limit)

            async def write_record(
                self, record: Any, *, new_entries: Sequence[Any] = (), expected_revision: str | None
            ) -> None:
                before = hooks.get("before_write")
                if before is not None:
                    await before(record)
                await inner.write_record(record, new_entries=new_entries, expected_revision=expected_revision)

            async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
                await inner.delete_record(conversation_id, expected_revision=expected_revision)

            async def read_entry(self, entry_id: str) -> Any:
                if entry_id in hooks.get("failing_entries", ()):
                    raise RuntimeError("connection reset while reading this conversation")
                return await inner.read_entry(entry_id)

        return Over()


@needs_store
def test_a_conversation_saved_during_the_repair_is_a_conflict_left_as_they_saved_it(
    backend: Backend, tmp_path: Path
) -> None:
    """Another writer saves a turn between histfix's read and its write: the revision check in the
    backend's one statement refuses histfix's save; a second run repairs what they saved."""
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    import histfix
    from histfix.store import ConversationSource, Journal, repair_conversations

    save(backend, "b-broken", BROKEN)
    save(backend, "e-broken", BROKEN)
    theirs = ModelRequest(parts=[UserPromptPart("their turn")])

    async def meddling() -> Any:
        inner, other = await backend.open(), await backend.open()

        async def before_write(record: Any) -> None:
            if record.conversation_id == "b-broken" and not getattr(other, "meddled", False):
                other.meddled = True  # once: their save, landing just before ours
                mine = await other.load("b-broken")
                await other.save(
                    Conversation(
                        messages=[*mine.messages, theirs], conversation_id="b-broken", revision=mine.revision
                    )
                )

        return Delegating(inner, before_write=before_write)

    with ConversationSource(meddling) as source:
        journal = Journal(tmp_path / "j.jsonl", "repair", source.url, resume=False)
        result = repair_conversations(source, journal=journal)
        journal.close()
    assert result.written == 1  # e-broken
    [(key, reason)] = result.skipped
    assert key == "b-broken" and "ConversationConflict" in reason
    record, conversation = loaded(backend, "b-broken")
    assert conversation.messages == [*load(BROKEN), theirs]  # nothing of theirs overwritten
    assert record.branches == []

    with ConversationSource(backend.open) as source:  # the second run picks it up
        journal = Journal(tmp_path / "j2.jsonl", "repair", source.url, resume=False)
        again = repair_conversations(source, journal=journal)
        journal.close()
    assert (again.written, again.skipped) == (1, [])
    assert loaded(backend, "b-broken")[1].messages == histfix.repair([*load(BROKEN), theirs])


@needs_store
def test_a_backend_failing_on_one_conversation_is_reported_and_the_run_goes_on(
    sql_backend: Backend, tmp_path: Path
) -> None:
    from histfix.store import ConversationSource, Journal, repair_conversations

    for key in ("a-broken", "b-broken", "c-broken"):
        save(sql_backend, key, BROKEN)
    failing = loaded(sql_backend, "a-broken")[0].head_id

    async def refusing(record: Any) -> None:
        if record.conversation_id == "c-broken":
            raise OSError("disk quota exceeded")

    async def faulty() -> Any:
        return Delegating(await sql_backend.open(), failing_entries={failing}, before_write=refusing)

    seen = []
    with ConversationSource(faulty) as source:
        journal = Journal(tmp_path / "j.jsonl", "repair", source.url, resume=False)
        result = repair_conversations(source, journal=journal, on_record=seen.append)
        journal.close()
    by_key = {record.key: record for record in seen}
    assert by_key["a-broken"].action == "not_loaded"
    assert "RuntimeError: connection reset while reading this conversation" in (
        by_key["a-broken"].error or ""
    )
    assert result.written == 1
    assert result.skipped == [("c-broken", "the store failed: OSError: disk quota exceeded")]
    assert loaded(sql_backend, "c-broken")[1].messages == load(BROKEN)


@needs_store
def test_a_head_naming_a_missing_entry_is_reported_with_its_key(
    sql_backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    save(sql_backend, "a-lost", HEALTHY)
    save(sql_backend, "b-healthy", HEALTHY)

    async def lose_head(store: Any) -> None:
        from conversation_backends import RECORD

        record = await store.read_record("a-lost")
        record.head_id = "no-such-entry"
        data = RECORD.dump_json(record).decode()
        if sql_backend.name == "sqlite":
            store.db.execute("UPDATE records SET record = ? WHERE conversation_id = 'a-lost'", (data,))
        else:
            await store.db.execute(
                f"UPDATE {store.records} SET record = %s WHERE conversation_id = 'a-lost'", (data,)
            )

    sql_backend.run(lose_head)
    status, out, _ = cli(capsys, "scan", sql_backend.cli, "--jsonl")
    rows = records(out)
    assert status == 0
    assert rows["b-healthy"]["action"] == "unchanged"
    assert rows["a-lost"]["action"] == "not_loaded"
    assert (
        rows["a-lost"]["error"]
        == "its history does not read from its head 'no-such-entry': KeyError: 'no-such-entry'"
    )


@needs_store
def test_a_scope_hides_the_other_scopes_conversations(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = make_backend("sqlite", request, tmp_path, monkeypatch)
    save(backend, "mine", BROKEN, scope="alice")
    save(backend, "theirs", BROKEN, scope="bob")
    status, out, _ = cli(capsys, "scan", backend.cli, "--scope", "alice", "--jsonl")
    assert status == 1 and set(records(out)) == {"mine"}
    bob = loaded(backend, "theirs")[0]
    status, out, _ = cli(
        capsys, "repair", backend.cli, "--scope", "alice", "--write", "--backup", str(tmp_path / "j.jsonl")
    )
    assert status == 0 and "repaired 1 conversations" in out
    assert loaded(backend, "theirs")[0] == bob
    assert loaded(backend, "mine")[0].scope == "alice"


@needs_store
def test_branches_are_scanned_on_request(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    backend = make_backend("memory", request, tmp_path, monkeypatch)
    save(backend, "c", BROKEN)
    old = loaded(backend, "c")[0]

    async def branch(store: Any) -> None:
        edited = await store.branch("c", at=1, expected_revision=old.revision)
        edited.messages.append(ModelRequest(parts=[UserPromptPart("edited question")]))
        await store.save(edited)

    backend.run(branch)
    status, out, _ = cli(capsys, "scan", backend.cli, "--jsonl")
    assert status == 0 and set(records(out)) == {"c"} and records(out)["c"]["messages"] == 2
    status, out, _ = cli(capsys, "scan", backend.cli, "--branches", "--jsonl")
    rows = records(out)
    assert status == 1  # the branch is the broken history
    assert set(rows) == {"c", f"c#branch={old.head_id}"}
    assert rows[f"c#branch={old.head_id}"]["action"] == "repair"
    assert rows[f"c#branch={old.head_id}"]["messages"] == len(BROKEN)
    with pytest.raises(SystemExit) as stopped:  # a repair saves each conversation's current history only
        main(["repair", backend.cli, "--branches"])
    assert stopped.value.code == 2 and "unrecognized arguments: --branches" in capsys.readouterr().err


# --- migrate ---------------------------------------------------------------------------------------


def legacy_jsonl(path: Path, count: int, *, broken_every: int = 10) -> list[str]:
    keys = []
    with path.open("w") as handle:
        for number in range(count):
            key = f"k{number:05d}"
            history = BROKEN if number % broken_every == 0 else HEALTHY
            row = {"id": key, "user": f"u{number % 3}", "messages": json.loads(to_json(history))}
            handle.write(json.dumps(row) + "\n")
            keys.append(key)
    return keys


@needs_store
def test_migrate_moves_a_legacy_store_repairs_it_and_never_overwrites(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import histfix

    legacy = tmp_path / "chats.jsonl"
    keys = legacy_jsonl(legacy, 6, broken_every=3)
    with legacy.open("a") as handle:
        handle.write('{"id": "bad", "user": "u0", "messages": [{"kind": "nonsense"}]}\n')
        handle.write('{"id": "no-user", "messages": []}\n')
    save(backend, keys[1], BROKEN)  # already there, with another history

    status, out, err = cli(capsys, "migrate", str(legacy), backend.cli, "--scope-field", "user")
    assert status == 1
    assert "would migrate: 5 into" in out and "dry run: nothing saved" in out
    assert loaded(backend, keys[0])[0] is None

    journal = str(tmp_path / "migrate.jsonl")
    # Two workers on SQLite only (each starts a fresh interpreter): each saves through its own store.
    argv = ["migrate", str(legacy), backend.cli, "--scope-field", "user", "--write", "--verify"]
    jobs = ["--jobs", "2", "--batch-size", "2"] if backend.name == "sqlite" else ["--jobs", "1"]
    argv += ["--journal", journal, *jobs]
    status, out, err = cli(capsys, *argv)
    assert status == 1
    assert "migrated: 5 into" in out and "(repaired 2;" in out
    assert "skipped as existing: 1" in out and "not loadable: 2" in out
    assert "verified: 5 load back as saved" in out
    assert f"histfix: {keys[1]}: the store already has a conversation with this id" in err
    assert "histfix: no-user: not moved: no text field 'user' to take its scope from" in err
    record, conversation = loaded(backend, keys[0])
    assert conversation.messages == histfix.repair(load(BROKEN)) and record.scope == "u0"
    assert loaded(backend, keys[1])[1].messages == load(BROKEN)  # theirs, untouched
    assert loaded(backend, keys[4])[1].messages == load(HEALTHY)

    status, out, _ = cli(capsys, *argv[:7], "--journal", str(tmp_path / "again.jsonl"))
    assert "migrated: 0" in out and "already there with this very history: 5" in out


@needs_store
def test_migrate_from_a_legacy_table_on_the_real_postgresql(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = make_backend("postgres", request, tmp_path, monkeypatch)
    server = request.getfixturevalue("pg_server")
    table = server.make_table("jsonb", [(1, to_json(HEALTHY).decode()), (2, to_json(BROKEN).decode())])
    status, out, _ = cli(
        capsys, "migrate", server.url(table), backend.cli, "--scope", "team", "--write", "--verify"
    )
    assert status == 0 and "migrated: 2 into" in out and "verified: 2 load back as saved" in out
    assert loaded(backend, "2")[0].scope == "team"


def _entries_and_records(db: Path) -> tuple[int, int, int]:
    """Entries stored, records stored, and messages the records' histories hold."""
    with sqlite3.connect(db) as connection:
        entries = connection.execute("SELECT count(*) FROM entries").fetchone()[0]
        rows = connection.execute("SELECT record FROM records").fetchall()
        parents = dict(
            connection.execute("SELECT id, json_extract(entry, '$.parent_id') FROM entries").fetchall()
        )
    reached = 0
    for (row,) in rows:
        entry = json.loads(row)["head_id"]
        while entry is not None:
            reached += 1
            entry = parents[entry]
    return entries, len(rows), reached


@needs_store
def test_kill_9_during_a_migrate_then_resume_moves_each_history_once_and_none_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    legacy = tmp_path / "chats.jsonl"
    keys = legacy_jsonl(legacy, 150)
    db = tmp_path / "conversations.db"
    journal = tmp_path / "migrate.jsonl"
    env = {
        **os.environ,
        "CONVERSATION_DB": str(db),
        "PYTHONPATH": os.pathsep.join([str(SRC), str(SUPPORT)]),
    }
    command = [
        sys.executable,
        "-m",
        "histfix",
        "migrate",
        str(legacy),
        "py:conversation_backends:sqlite_store",
    ]
    command += ["--write", "--journal", str(journal), "--jobs", "1", "--batch-size", "5"]
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        if journal.exists() and journal.read_text().count('"committed"') >= 2:
            break
        time.sleep(0.005)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL, child.stderr.read() if child.stderr else ""
    entries, stored, reached = _entries_and_records(db)
    assert 0 < stored < len(keys)
    assert entries == reached  # every entry belongs to a saved conversation: none half-written

    committed = [
        json.loads(line)["committed"] for line in journal.read_text().splitlines() if "committed" in line
    ]
    remaining = len(keys) - keys.index(committed[-1]) - 1

    monkeypatch.setenv("CONVERSATION_DB", str(db))
    status, out, err = cli(capsys, *command[3:], "--resume")
    assert (status, err) == (0, "")
    entries, stored, reached = _entries_and_records(db)
    assert stored == len(keys) and entries == reached
    # The resumed run saw only what came after the last committed key: what the killed run saved
    # of its last batch it finds already there, holding exactly this history.
    assert f"{remaining:,} histories in" in out
    assert "skipped as existing: 0" in out


# --- naming the store, and releases without one ------------------------------------------------------


@needs_store
@pytest.mark.parametrize(
    ("target", "error"),
    [
        (
            "py:no_such_module_here:store",
            "cannot import no_such_module_here (No module named 'no_such_module_here')",
        ),
        ("py:conversation_backends:nothing", "conversation_backends has no attribute nothing"),
        (
            "py:conversation_backends:RECORD",
            "is a TypeAdapter, not a ConversationStore nor a zero-argument factory",
        ),
        ("py:conversation_backends:SQLiteConversationStore", "calling it with no arguments failed"),
        ("py:conversation_backends", "expected py:module.path:attribute"),
    ],
)
def test_a_py_name_that_names_no_store_is_one_line(
    target: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = cli(capsys, "scan", target)
    assert status == 2 and out == ""
    assert err.startswith(f"histfix: {target}") and error in err and err.count("\n") == 1


@pytest.mark.skipif(HAS_STORE, reason="this release has ConversationStore")
@pytest.mark.parametrize(
    "argv",
    [
        ["scan", "py:myapp.storage:store"],
        ["repair", "py:myapp.storage:store", "--write", "--backup", "j.jsonl"],
        ["restore", "j.jsonl", "py:myapp.storage:store"],
        ["migrate", "chats.jsonl", "py:myapp.storage:store"],
    ],
)
def test_without_conversation_store_each_command_says_so_in_one_line(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chats.jsonl").write_text(to_json(HEALTHY).decode() + "\n")
    status, out, err = cli(capsys, *argv)
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith("histfix: pydantic-ai-slim ") and "has no ConversationStore" in err
