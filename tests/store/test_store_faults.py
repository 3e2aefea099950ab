"""Faults during a store run: a concurrent writer, Ctrl-C, kill -9, a full disk, a read-only file.

Whatever happens, every history is either the original or the repair, never half-written; what
was written can be restored byte for byte from the backup, and ``--resume`` finishes the run.
"""

from __future__ import annotations

import errno
import os
import random
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from histfix._cli.commands import main
from histfix.store import Replacement, Stored, WriteOutcome, open_source
from histfix.store._record import Options, examine
from histfix.store._runner import repair_source

from store_cases import REPAIRED, StoreUnderTest

ROOT = Path(__file__).parent.parent.parent


def expected(store: StoreUnderTest) -> dict[str, bytes]:
    return {k: examine(k, v, Options(want_new=True)).new or v for k, v in store.values().items()}


def assert_each_old_or_new(store: StoreUnderTest, old: dict[str, bytes], new: dict[str, bytes]) -> int:
    """Every key holds its original or its repair; returns how many hold the repair."""
    now = store.values()
    assert now.keys() == old.keys()
    for key, value in now.items():
        assert value in (old[key], new[key]), f"{key} is neither the original nor the repair"
    return sum(1 for key, value in now.items() if value != old[key])


@pytest.mark.parametrize("kind", ["dir", "jsonl", "sqlite-text", "sqlite-blob"])
def test_a_history_changed_between_read_and_write_is_skipped_never_overwritten(
    kind: str, tmp_path: Path
) -> None:
    store = StoreUnderTest(kind, tmp_path)
    theirs = store.stored["example-cancelled_stream"].replace(b"\n", b" ")

    with open_source(store.url) as source:
        # a directory's keys are relative paths (some in a subfolder), the others the stored keys
        (stored,) = [
            s
            for batch in source.read()
            for s in batch
            if s.key.removesuffix(".json").rpartition("/")[2] == "example-aborted_mid_tool"
        ]
        key = stored.key
        now = store.overwrite(key, theirs)
        outcomes = source.write([Replacement(key, stored.raw, b"[]")])
        gone = source.write([Replacement("no-such-key", b"[]", b"[]")])
    assert outcomes == [WriteOutcome.CHANGED_SINCE_READ]
    assert gone == [WriteOutcome.GONE]
    assert store.values()[key] == now


class ConcurrentWriter:
    """A real source whose rows another program rewrites right after a batch is read."""

    def __init__(self, store: StoreUnderTest, keys: set[str], theirs: bytes) -> None:
        self.inner = open_source(store.url)
        self.store, self.keys, self.theirs = store, keys, theirs
        self.written: dict[str, bytes] = {}
        self.url = self.inner.url
        self.rewrites_whole_store = self.inner.rewrites_whole_store

    def read(self, *, after: str | None = None, batch_size: int = 500) -> Iterator[list[Stored]]:
        for batch in self.inner.read(after=after, batch_size=batch_size):
            for stored in batch:
                if stored.key in self.keys:
                    self.written[stored.key] = self.store.overwrite(stored.key, self.theirs)
            yield batch

    def count(self, *, after: str | None = None) -> int | None:
        return None

    def write(self, batch: Sequence[Replacement]) -> list[WriteOutcome]:
        return self.inner.write(batch)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("kind", ["dir", "jsonl", "sqlite-text"])
def test_the_run_reports_what_a_concurrent_writer_changed_and_leaves_it(kind: str, tmp_path: Path) -> None:
    from histfix.store._backup import Backup

    store = StoreUnderTest(kind, tmp_path)
    key = "example-trimmed_slice" + (".json" if kind == "dir" else "")
    theirs = b"[]"
    source = ConcurrentWriter(store, {key}, theirs)
    backup = Backup(tmp_path / "backup.jsonl", source.url, resume=False)
    result = repair_source(source, Options(), backup=backup, jobs=1, batch_size=10)  # type: ignore[arg-type]
    backup.close()
    source.close()
    assert [k for k, _ in result.skipped] == [key] and "changed by someone else" in result.skipped[0][1]
    assert result.written == REPAIRED - 1
    assert store.values()[key] == source.written[key]


def run_and_stop(
    store: StoreUnderTest, backup: Path, signal_number: int, after_records: int, *extra: str
) -> subprocess.CompletedProcess[str]:
    """``histfix repair --write`` in a process of its own, sent ``signal_number`` once it has
    examined ``after_records`` histories (so the signal lands at a different point each time)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "histfix", "repair", store.url, "--write", "--backup", str(backup)]
    argv += ["--jsonl", "--batch-size", "2", *extra]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert child.stdout is not None
    for seen, _ in enumerate(child.stdout, start=1):
        if seen >= after_records:
            child.send_signal(signal_number)
            break
    out, err = child.communicate(timeout=300)
    return subprocess.CompletedProcess(argv, child.returncode, out, err)


@pytest.mark.parametrize("kind", ["dir", "jsonl", "sqlite-text"])
def test_kill_9_during_a_write_leaves_each_history_old_or_new_and_resume_finishes(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest(kind, tmp_path)
    before, old, new = store.snapshot(), store.values(), expected(store)
    # JSONL is rewritten once, after the last record: stop there so the kill meets the rewrite
    seed = random.randrange(1 << 30)
    stop = len(old) if kind == "jsonl" else random.Random(seed).randint(5, len(old) - 5)
    backup = tmp_path / "backup.jsonl"
    killed = run_and_stop(store, backup, signal.SIGKILL, stop, "--jobs", "1")
    assert killed.returncode == -signal.SIGKILL, (seed, killed.stderr)
    assert_each_old_or_new(store, old, new)

    assert main(["repair", store.url, "--write", "--backup", str(backup), "--resume", "--jobs", "1"]) == 0
    assert store.values() == new
    capsys.readouterr()
    assert main(["restore", str(backup), store.url]) == 0
    assert store.snapshot() == before, seed


def test_ctrl_c_stops_between_writes_with_one_line_and_resume_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("sqlite-text", tmp_path)
    before, old, new = store.snapshot(), store.values(), expected(store)
    backup = tmp_path / "backup.jsonl"
    stopped = run_and_stop(store, backup, signal.SIGINT, 30, "--jobs", "2")
    assert stopped.returncode == 130, stopped.stderr
    assert stopped.stderr.count("\n") == 1 and "--resume" in stopped.stderr, stopped.stderr
    written = assert_each_old_or_new(store, old, new)
    assert 0 < written < REPAIRED

    assert main(["repair", store.url, "--write", "--backup", str(backup), "--resume", "--jobs", "1"]) == 0
    assert f"repaired {REPAIRED - written} histories" in capsys.readouterr().out
    assert store.values() == new
    assert main(["restore", str(backup), store.url]) == 0
    assert store.snapshot() == before


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (6000, 6000))


@pytest.mark.parametrize("kind", ["dir", "jsonl", "sqlite-text"])
def test_a_full_disk_stops_the_run_with_one_line_and_nothing_half_written(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest(kind, tmp_path)
    before, old, new = store.snapshot(), store.values(), expected(store)
    backup = tmp_path / "backup.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-m", "histfix", "repair", store.url, "--write", "--backup", str(backup)]
    ran = subprocess.run(
        [*argv, "--jobs", "1", "--batch-size", "3"],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=_limit_file_size,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.count("\n") == 1 and ("File too large" in ran.stderr or "full" in ran.stderr), (
        ran.stderr
    )
    assert "--resume" in ran.stderr
    assert_each_old_or_new(store, old, new)
    assert main(["restore", str(backup), store.url]) == 0
    capsys.readouterr()
    assert store.snapshot() == before


@pytest.mark.skipif(
    os.geteuid() == 0, reason="root writes read-only files: the read-only file system test covers root"
)
@pytest.mark.parametrize("kind", ["dir", "sqlite-text"])
def test_a_read_only_store_is_one_line_and_unchanged(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest(kind, tmp_path)
    for path in [store.path, *store.path.rglob("*")] if kind == "dir" else [store.path]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    before = store.snapshot()
    assert main(["repair", store.url, "--write", "--backup", str(tmp_path / "b.jsonl"), "--jobs", "1"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert store.snapshot() == before


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A real small file system: a tmpfs of ``size`` mounted at ``path``, unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("a real full disk or read-only file system: mounting a tmpfs needs root")
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True, timeout=30)


def fill(folder: Path) -> Path:
    """Fill the file system ``folder`` is on to the last byte; the filler file."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    return filler


def test_a_backup_on_a_disk_that_fills_stops_with_one_line_and_resume_finishes_once_there_is_room(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("sqlite-text", tmp_path)
    before, old, new = store.snapshot(), store.values(), expected(store)
    with tmpfs(tmp_path / "small", "32k") as small:
        backup = small / "backup.jsonl"
        argv = ["repair", store.url, "--write", "--backup", str(backup), "--jobs", "1", "--batch-size", "3"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "No space left on device" in err and "--resume" in err, err
        written = assert_each_old_or_new(store, old, new)
        assert 0 < written < REPAIRED

        subprocess.run(["mount", "-o", "remount,size=1m", str(small)], check=True, timeout=30)
        assert main([*argv, "--resume"]) == 0
        assert f"repaired {REPAIRED - written} histories" in capsys.readouterr().out
        assert store.values() == new
        assert main(["restore", str(backup), store.url]) == 0
    assert store.snapshot() == before


def test_a_store_on_a_full_disk_is_one_line_unchanged_and_leaves_no_temporary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with tmpfs(tmp_path / "small", "1m") as small:
        store = StoreUnderTest("dir", small)
        before, new = store.snapshot(), expected(store)
        filler = fill(small)
        argv = ["repair", store.url, "--write", "--backup", str(tmp_path / "b.jsonl"), "--jobs", "1"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "No space left on device" in err, err
        assert store.snapshot() == before
        assert sorted(p.name for p in small.rglob("*") if p.is_file() and not p.name.endswith(".json")) == [
            "filler"
        ]

        filler.unlink()
        assert main([*argv, "--resume"]) == 0
        assert store.values() == new


@pytest.mark.parametrize("kind", ["dir", "sqlite-text"])
def test_a_store_on_a_read_only_file_system_is_one_line_and_unchanged(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What the chmod test above checks as a user, for root (whom file modes do not stop).
    with tmpfs(tmp_path / "ro", "2m") as folder:
        store = StoreUnderTest(kind, folder)
        before = store.snapshot()
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True, timeout=30)
        argv = ["repair", store.url, "--write", "--backup", str(tmp_path / "b.jsonl"), "--jobs", "1"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and ("read-only" in err.lower() or "readonly" in err), err
        assert store.snapshot() == before


def test_a_store_command_leaves_the_failure_to_its_own_line_not_the_driver_s_cleanup_warning(
    tmp_path: Path,
) -> None:
    """psycopg warns through logging while it cleans up after a lost server ("error ignored
    terminating ..."); with logging unconfigured (a real process, not pytest's) that reaches stderr
    beside the command's one line."""
    store = tmp_path / "empty"
    store.mkdir()
    code = (
        "import logging, sys\n"
        "from histfix._cli.commands import main\n"
        f"status = main(['scan', {str(store)!r}])\n"
        "logging.getLogger('psycopg').warning('error ignored terminating <psycopg.Pipeline [BAD]>: gone')\n"
        "sys.exit(status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "error ignored" not in done.stderr
