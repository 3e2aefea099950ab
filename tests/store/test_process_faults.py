"""Faults as production delivers them, to one process and not its group: ``kill -9`` of the run
alone (as the OOM killer or a container runtime does), ``kill -9`` of one of its workers, SIGTERM
(to the process, and to its group) wherever the run waits, the server restarted mid-batch, and a
row or database another session holds locked.

After each: no histfix process left, no histfix server session left (idle in a transaction or
otherwise), no temporary file left beside a file store, every history the original or the repair,
and ``--resume`` finishing within its time limit. On the real PostgreSQL server and on SQLite,
with ``--jobs 1`` and ``--jobs 2``.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from test_postgres_cli import PgStore, expected_after_repair
from test_store_faults import assert_each_old_or_new, expected

from histfix._cli.commands import main

from postgres_server import USER, PgServer
from store_cases import StoreUnderTest

ROOT = Path(__file__).resolve().parents[2]
#: Seconds any one step may take before the test fails rather than hangs.
STEP = 60
#: How soon workers must be gone once the run is killed.
WORKERS_GONE_WITHIN = 1.0
#: The tests' --lock-timeout (seconds): short, so a held row costs the test little.
LOCK_TIMEOUT = "0.5"


# --- processes -----------------------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first, then the parent pid)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    """Running (a zombie has ended: only its exit status waits to be collected)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and fields[0] != "Z" and int(fields[1]) == pid:
                found.append(int(entry))
    return found


def wait_until(condition: Callable[[], bool], seconds: float, what: str) -> float:
    """Seconds until ``condition`` held; fails after ``seconds``."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < seconds, f"not within {seconds} s: {what}"
        time.sleep(0.01)
    return time.monotonic() - start


class _Expired(KeyboardInterrupt):
    """What ``within`` raises: a KeyboardInterrupt, which a database driver answers by cancelling
    the statement it waits on (any other exception would leave it waiting there)."""


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail rather than hang when the block takes longer than ``seconds``."""

    def expire(signum: int, frame: object) -> None:
        raise _Expired

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _Expired:
        pytest.fail(f"took longer than {seconds} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Run:
    """``histfix ARGS`` in a process of its own, in a process group of its own (so its group can
    be signalled without the test's); every process it started is killed when the test ends."""

    def __init__(self, *args: str, code: str | None = None) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, *(["-c", code] if code else ["-m", "histfix"]), *args],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.pid = self.process.pid
        self.workers: list[int] = []

    def lines(self, count: int) -> None:
        """Read ``count`` lines of its output (records, with --jsonl)."""
        assert self.process.stdout is not None
        with within(STEP):
            for _ in range(count):
                assert self.process.stdout.readline(), self.finish()[1]

    def running(self) -> bool:
        """Whether it still runs; fails, with its stderr, if it has ended."""
        assert self.process.poll() is None, f"it ended: {self.finish()}"
        return True

    def find_workers(self, count: int) -> list[int]:
        wait_until(lambda: self.running() and len(children(self.pid)) >= count, STEP, f"{count} workers")
        self.workers = children(self.pid)
        return self.workers

    def finish(self) -> tuple[int, str]:
        """Its exit status and stderr, once it ends (within STEP seconds)."""
        _, err = self.process.communicate(timeout=STEP)
        return self.process.returncode, err

    def kill_all(self) -> None:
        for pid in [self.pid, *self.workers, *children(self.pid)]:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.communicate(timeout=STEP)


@pytest.fixture
def runs() -> Iterator[Callable[..., Run]]:
    started: list[Run] = []

    def start(*args: str, code: str | None = None) -> Run:
        started.append(Run(*args, code=code))
        return started[-1]

    yield start
    for run in started:
        run.kill_all()


def assert_no_process_left(run: Run) -> None:
    assert not alive(run.pid) and not any(alive(pid) for pid in run.workers), "a histfix process is left"


# --- SQLite --------------------------------------------------------------------------------------


@contextmanager
def database_locked(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection's open write transaction on the database file."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        yield db
    finally:
        db.close()


def sqlite_args(store: StoreUnderTest, backup: Path, jobs: int, *extra: str) -> list[str]:
    return [
        "repair", store.url, "--write", "--backup", str(backup), "--batch-size", "2", "--jsonl",
        "--jobs", str(jobs), *extra,
    ]  # fmt: skip


def assert_sqlite_resume_finishes(store: StoreUnderTest, backup: Path, new: dict[str, bytes]) -> None:
    with within(STEP):
        assert main(sqlite_args(store, backup, 1, "--resume")) == 0
    assert store.values() == new


def test_sqlite_kill_9_of_the_run_alone_leaves_no_worker_and_resume_finishes(
    tmp_path: Path, runs: Callable[..., Run], capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("sqlite-text", tmp_path)
    old, new = store.values(), expected(store)
    backup = tmp_path / "backup.jsonl"
    run = runs(*sqlite_args(store, backup, 2))
    run.lines(10)
    workers = run.find_workers(2)
    os.kill(run.pid, signal.SIGKILL)
    gone = wait_until(lambda: not any(alive(pid) for pid in workers), 5, "workers gone")
    assert gone <= WORKERS_GONE_WITHIN, f"workers outlived the run by {gone:.2f} s"
    assert run.finish()[0] == -signal.SIGKILL
    assert_each_old_or_new(store, old, new)
    assert_sqlite_resume_finishes(store, backup, new)
    capsys.readouterr()


def test_sqlite_kill_9_of_one_worker_stops_the_run_with_one_line_and_resume_finishes(
    tmp_path: Path, runs: Callable[..., Run], capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("sqlite-text", tmp_path)
    old, new = store.values(), expected(store)
    backup = tmp_path / "backup.jsonl"
    with database_locked(store.path):
        run = runs(*sqlite_args(store, backup, 2, "--lock-timeout", "60"))
        run.lines(2)  # the first batch's records: its write now waits for the lock
        victim, _ = run.find_workers(2)
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: not alive(victim), 5, "the worker killed")
    status, err = run.finish()
    assert status == 2, err
    assert err.count("\n") == 1 and f"histfix: worker process {victim} was killed by SIGKILL" in err, err
    assert "--resume continues after it" in err
    assert_no_process_left(run)
    assert_each_old_or_new(store, old, new)
    assert_sqlite_resume_finishes(store, backup, new)
    capsys.readouterr()


def test_sigterm_while_workers_compute_ends_them_and_stops_the_run_with_143(
    tmp_path: Path, runs: Callable[..., Run], capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("sqlite-text", tmp_path)
    old, new = store.values(), expected(store)
    backup = tmp_path / "backup.jsonl"
    run = runs(*sqlite_args(store, backup, 2))
    run.lines(4)
    workers = run.find_workers(2)
    for pid in workers:  # frozen mid-batch: the run can only wait for them
        os.kill(pid, signal.SIGSTOP)
    time.sleep(0.3)
    sent = time.monotonic()
    os.kill(run.pid, signal.SIGTERM)
    status, err = run.finish()
    assert time.monotonic() - sent < 5, "SIGTERM was not obeyed at once"
    assert status == 143, err
    assert err.count("\n") == 1 and err.startswith("histfix: terminated (SIGTERM); written through"), err
    assert_no_process_left(run)
    assert_each_old_or_new(store, old, new)
    assert_sqlite_resume_finishes(store, backup, new)
    capsys.readouterr()


@pytest.mark.parametrize(("jobs", "group"), [(1, True), (2, False)])
def test_sqlite_sigterm_while_the_database_is_locked_stops_the_run_at_once_with_143(
    tmp_path: Path, jobs: int, group: bool, runs: Callable[..., Run], capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("sqlite-text", tmp_path)
    old, new = store.values(), expected(store)
    backup = tmp_path / "backup.jsonl"
    with database_locked(store.path):
        run = runs(*sqlite_args(store, backup, jobs, "--lock-timeout", "60"))
        run.lines(2)
        if jobs > 1:
            run.find_workers(jobs)
        time.sleep(0.3)  # into the write's wait for the lock
        sent = time.monotonic()
        if group:
            os.killpg(run.pid, signal.SIGTERM)
        else:
            os.kill(run.pid, signal.SIGTERM)
        status, err = run.finish()
        assert time.monotonic() - sent < 5, "SIGTERM was not obeyed at once"
    assert status == 143, err
    assert err.count("\n") == 1 and err.startswith("histfix: terminated (SIGTERM); written through"), err
    assert_no_process_left(run)
    assert store.values() == old
    assert_sqlite_resume_finishes(store, backup, new)
    capsys.readouterr()


def test_sqlite_a_database_another_connection_keeps_locked_stops_the_run_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One job: the run itself writes (the SIGTERM tests hold the file under two jobs too).
    store = StoreUnderTest("sqlite-text", tmp_path)
    before, new = store.snapshot(), expected(store)
    backup = tmp_path / "backup.jsonl"
    with database_locked(store.path), within(STEP):
        assert main(sqlite_args(store, backup, 1, "--lock-timeout", LOCK_TIMEOUT)) == 2
    err = capsys.readouterr().err
    locked = "the database is locked: another connection has held it for over 0.5 s (the lock timeout)"
    assert err.count("\n") == 1 and err.startswith(f"histfix: {store.url}: {locked}; written through"), err
    assert store.snapshot() == before
    assert_sqlite_resume_finishes(store, backup, new)


# --- PostgreSQL ----------------------------------------------------------------------------------


def histfix_sessions(server: PgServer) -> list[tuple[Any, ...]]:
    """(pid, state, wait_event_type) of every server session a histfix run opened."""
    return server.execute(
        "SELECT pid, state, wait_event_type FROM pg_stat_activity "
        "WHERE application_name LIKE 'histfix%%' AND pid <> pg_backend_pid()"
    )


def wait_for_the_lock_wait(run: Run, server: PgServer) -> None:
    """Wait until ``run`` waits on a row lock (inside its batch's transaction)."""

    def waiting() -> bool:
        return run.running() and any(wait == "Lock" for _, _, wait in histfix_sessions(server))

    wait_until(waiting, STEP, "the run waiting on the held row")


@contextmanager
def row_held(server: PgServer, table: str, key: str) -> Iterator[None]:
    """Another session's open transaction holding ``key``'s row lock, as an application's would."""
    conn = server.admin()
    try:
        conn.autocommit = False
        conn.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE", (key,))
        yield
    finally:
        conn.close()


def pg_store(server: PgServer) -> PgStore:
    """The corpus in a jsonb table whose run may create its backup table beside it."""
    server.execute(f"GRANT CREATE ON SCHEMA public TO {USER}")
    return PgStore(server, "jsonb")


def held_key(store: PgStore, expected: dict[str, Any]) -> str:
    """A key in the middle of the store whose row the repair changes."""
    before = store.snapshot()
    changing = [key for key in sorted(before) if expected[key] != before[key]]
    return changing[len(changing) // 2]


def write_args(store: PgStore, jobs: int, *extra: str, backup: str | None = None) -> list[str]:
    """``repair --write`` of the store, into a backup table of its own unless ``backup`` names one."""
    return [
        "repair", store.url, "--write", "--backup", backup or f"table:{store.table}_bk", "--batch-size", "2",
        "--jobs", str(jobs), "--lock-timeout", LOCK_TIMEOUT, *extra,
    ]  # fmt: skip


def assert_resume_finishes(store: PgStore, expected: dict[str, Any], backup: str | None = None) -> None:
    with within(STEP):  # one job: what is tested is the run that stopped, not this one's workers
        assert main(write_args(store, 1, "--resume", backup=backup)) == 0
    assert store.snapshot() == expected


def assert_old_or_new(store: PgStore, before: dict[str, Any], expected: dict[str, Any]) -> None:
    now = store.snapshot()
    assert all(now[key] in (before[key], expected[key]) for key in now), "a row half written"


def assert_no_session_left(server: PgServer) -> None:
    wait_until(lambda: not histfix_sessions(server), 10, f"histfix sessions gone: {histfix_sessions(server)}")


def test_kill_9_of_the_run_alone_inside_a_transaction_leaves_no_worker_no_session_and_resume_finishes(
    pg_server: PgServer, runs: Callable[..., Run], capsys: pytest.CaptureFixture[str]
) -> None:
    # Two jobs: test_postgres_cli.py and test_backup_table.py kill one-job runs at random points.
    store = pg_store(pg_server)
    before, expected = store.snapshot(), expected_after_repair(store)
    with row_held(pg_server, store.table, held_key(store, expected)):
        run = runs(*write_args(store, 2, "--lock-timeout", "60"))
        workers = run.find_workers(2)
        wait_for_the_lock_wait(run, pg_server)
        os.kill(run.pid, signal.SIGKILL)
        gone = wait_until(lambda: not any(alive(pid) for pid in workers), 5, "workers gone")
        assert gone <= WORKERS_GONE_WITHIN, f"workers outlived the run by {gone:.2f} s"
        assert run.finish()[0] == -signal.SIGKILL
    assert_no_session_left(pg_server)
    assert_no_process_left(run)
    assert_old_or_new(store, before, expected)
    assert_resume_finishes(store, expected)
    capsys.readouterr()


@pytest.mark.parametrize("kind", ["table", "file"])
def test_a_row_another_session_holds_is_reported_busy_the_rest_written_and_resume_writes_it(
    pg_server: PgServer, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One job: the run itself writes, whatever its workers do (the tests above hold rows with two).
    store = pg_store(pg_server)
    before, expected = store.snapshot(), expected_after_repair(store)
    key = held_key(store, expected)
    backup = str(tmp_path / "backup.jsonl") if kind == "file" else None
    with row_held(pg_server, store.table, key):
        started = time.monotonic()
        with within(STEP):
            assert main(write_args(store, 1, backup=backup)) == 1
        waited = time.monotonic() - started
        err = capsys.readouterr().err
        assert err.splitlines() == [
            f"histfix: {key}: not written: held locked by another session for over {LOCK_TIMEOUT} s "
            "(the lock timeout): left as it is; resuming the run tries it again"
        ], err
        assert store.snapshot() == {**expected, key: before[key]}
        assert_no_session_left(pg_server)
    assert waited < float(LOCK_TIMEOUT) + STEP / 2  # the run waited once, then went on
    assert_resume_finishes(store, expected, backup)
    assert "repaired 1 histories" in capsys.readouterr().out
    with within(STEP):  # the backup recorded it tried the row again: a further resume does not
        assert main(write_args(store, 1, "--resume", backup=backup)) == 0
    assert "nothing to repair" in capsys.readouterr().out


def test_a_session_bounds_its_lock_waits_and_asks_the_server_to_end_it_if_abandoned(
    pg_server: PgServer,
) -> None:
    from histfix.store import open_source

    store = pg_store(pg_server)
    names = ("lock_timeout", "idle_in_transaction_session_timeout", "client_connection_check_interval")
    query = "SELECT name, setting FROM pg_settings WHERE name = ANY(%s) ORDER BY name"
    with open_source(store.url, lock_timeout=2.5) as source:
        settings = dict(source._conn.execute(query, (list(names),)).fetchall())  # type: ignore[attr-defined]
        application = source._conn.execute("SHOW application_name").fetchone()  # type: ignore[attr-defined]
    assert settings == {
        "client_connection_check_interval": "1000",
        "idle_in_transaction_session_timeout": "30000",
        "lock_timeout": "2500",
    }
    assert application == ("histfix",)
    # A limit already shorter (the role's, the database's or the URL's own) is kept.
    url = store.url.replace("?", "?options=-c%20idle_in_transaction_session_timeout%3D5s&", 1)
    with open_source(url) as source:
        settings = dict(source._conn.execute(query, (list(names),)).fetchall())  # type: ignore[attr-defined]
    assert settings["idle_in_transaction_session_timeout"] == "5000"
    assert settings["lock_timeout"] == "5000"


def assert_refused_while_the_run_works(store: PgStore, capsys: pytest.CaptureFixture[str]) -> None:
    """A second run (a scan, a --resume of the same run, a restore) says in one line that another
    histfix run is writing the table, and waits for nothing."""
    capsys.readouterr()
    restore = ["restore", f"table:{store.table}_bk", store.url]
    for second in (["scan", store.url, "--jobs", "1"], write_args(store, 1, "--resume"), restore):
        with within(STEP):
            assert main(second) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert "another histfix run is writing this table (server session" in err, err


@pytest.mark.parametrize(("jobs", "group"), [(1, False), (2, True)])
def test_sigterm_while_the_run_waits_on_a_row_lock_stops_it_as_ctrl_c_does_with_143(
    pg_server: PgServer, jobs: int, group: bool, runs: Callable[..., Run], capsys: pytest.CaptureFixture[str]
) -> None:
    store = pg_store(pg_server)
    before, expected = store.snapshot(), expected_after_repair(store)
    with row_held(pg_server, store.table, held_key(store, expected)):
        run = runs(*write_args(store, jobs, "--lock-timeout", "60"))
        if jobs > 1:
            run.find_workers(jobs)
        wait_for_the_lock_wait(run, pg_server)
        assert_refused_while_the_run_works(store, capsys)
        sent = time.monotonic()
        if group:
            os.killpg(run.pid, signal.SIGTERM)
        else:
            os.kill(run.pid, signal.SIGTERM)
        status, err = run.finish()
        assert time.monotonic() - sent < 5, "SIGTERM was not obeyed at once"
        assert status == 143, err
        assert err.count("\n") == 1 and err.startswith("histfix: terminated (SIGTERM); written through"), err
        assert "--resume continues after it" in err
        assert_no_session_left(pg_server)  # the statement was cancelled, its transaction rolled back
    assert_no_process_left(run)
    assert_old_or_new(store, before, expected)
    assert_resume_finishes(store, expected)
    capsys.readouterr()


def test_a_server_restarted_mid_batch_stops_the_run_with_one_line_and_resume_finishes(
    pg_server: PgServer, runs: Callable[..., Run], capsys: pytest.CaptureFixture[str]
) -> None:
    # Two jobs: test_backup_table.py stops the server under a one-job run.
    store = pg_store(pg_server)
    before, expected = store.snapshot(), expected_after_repair(store)
    with row_held(pg_server, store.table, held_key(store, expected)):
        run = runs(*write_args(store, 2, "--lock-timeout", "60"))
        run.find_workers(2)
        wait_for_the_lock_wait(run, pg_server)
        pg_server.stop()
        try:
            status, err = run.finish()
        finally:
            pg_server.start()
    assert status == 2, err
    assert err.count("\n") == 1 and "--resume continues after it" in err, err
    assert_no_process_left(run)
    assert_old_or_new(store, before, expected)
    assert_resume_finishes(store, expected)
    capsys.readouterr()


def test_kill_9_of_one_worker_stops_the_run_with_one_line_naming_its_batch_and_resume_finishes(
    pg_server: PgServer, runs: Callable[..., Run], capsys: pytest.CaptureFixture[str]
) -> None:
    store = pg_store(pg_server)
    before, expected = store.snapshot(), expected_after_repair(store)
    with row_held(pg_server, store.table, held_key(store, expected)):
        run = runs(*write_args(store, 2, "--lock-timeout", "1"))
        victim, _ = run.find_workers(2)
        wait_for_the_lock_wait(run, pg_server)
        os.kill(victim, signal.SIGKILL)
        status, err = run.finish()
    assert status == 2, err
    assert err.count("\n") == 1, err
    assert f"histfix: worker process {victim} was killed by SIGKILL while it examined the histories" in err
    assert "the run stopped there; written through" in err and "--resume continues after it" in err
    assert_no_process_left(run)
    assert_no_session_left(pg_server)
    assert_old_or_new(store, before, expected)
    assert_resume_finishes(store, expected)
    capsys.readouterr()


# --- directories and JSONL -----------------------------------------------------------------------

# A run whose store writes hold still at the fsync of their temporary file (written, not yet in
# place: the moment a temporary file exists), saying so by creating the file FLAG (argv[1]).
_HELD_AT_THE_TEMPORARY_FSYNC = """
import os, pathlib, sys, time
fsync = os.fsync
def held(fd):
    if os.readlink(f"/proc/self/fd/{fd}").endswith((".tmp", "(deleted)")):
        pathlib.Path(sys.argv[1]).touch()
        time.sleep(60)
    fsync(fd)
os.fsync = held
from histfix._cli.commands import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("kind", ["dir", "jsonl"])
def test_kill_9_while_a_file_store_is_written_leaves_no_temporary_file_and_no_worker(
    kind: str, tmp_path: Path, runs: Callable[..., Run], capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest(kind, tmp_path)
    old, new = store.values(), expected(store)
    backup, flag = tmp_path / "backup.jsonl", tmp_path / "flag"
    # A JSONL store is rewritten once every history is examined, its workers gone: one job.
    jobs = "2" if kind == "dir" else "1"
    argv = ["repair", store.url, "--write", "--backup", str(backup), "--batch-size", "2", "--jobs", jobs]
    run = runs(str(flag), *argv, code=_HELD_AT_THE_TEMPORARY_FSYNC)
    wait_until(lambda: run.running() and flag.exists(), STEP, "a temporary file written")
    workers = children(run.pid)
    os.kill(run.pid, signal.SIGKILL)
    gone = wait_until(lambda: not any(alive(pid) for pid in workers), 5, "workers gone")
    assert gone <= WORKERS_GONE_WITHIN, f"workers outlived the run by {gone:.2f} s"
    assert run.finish()[0] == -signal.SIGKILL
    assert sorted(p.name for p in tmp_path.rglob(".*.tmp")) == []
    assert_each_old_or_new(store, old, new)
    with within(STEP):
        assert main([*argv, "--resume", "--jobs", "1"]) == 0
    assert store.values() == new
    capsys.readouterr()
