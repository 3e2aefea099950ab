"""Faults as production delivers them, to one process and not its group: ``kill -9`` of the run
alone (as the OOM killer or a container runtime does), ``kill -9`` of one of its workers, SIGTERM
(to the process, and to its group) wherever the run waits, and a database another connection
holds locked.

After each: no histfix process left, every history the original or the repair, and ``--resume``
finishing within its time limit, with ``--jobs 1`` and ``--jobs 2``.
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

import pytest
from test_store_faults import assert_each_old_or_new, expected

from histfix._cli.commands import main

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
