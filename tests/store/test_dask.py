"""The scan on Dask (histfix.store.dask, ``histfix scan --dask``) against the local scan.

Every test runs on a real ``distributed.LocalCluster`` of two worker processes on 127.0.0.1
(started and stopped here, no dashboard), and compares with what the local scan makes of the
same store: the records, history by history and in order, and the summary.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

dask_bag = pytest.importorskip("dask.bag", reason="needs histfix[dask]")
distributed = pytest.importorskip("distributed", reason="needs histfix[dask]")

from histfix._cli.commands import main
from histfix.store import Record, examine, open_source
from histfix.store import dask as on_dask
from histfix.store._record import Options
from histfix.store._runner import repair_source
from histfix.store._summary import Summary

from dsl import call, req, resp, to_json, user
from postgres_server import USER, PgServer
from store_cases import STORE_KINDS, StoreUnderTest, histories, write_jsonl

ROOT = Path(__file__).resolve().parents[2]
#: Seconds any one wait on the cluster may take before the test fails instead of hanging.
WAIT = 120


def start_cluster(**config: Any) -> Any:
    import dask

    with dask.config.set(config):
        return distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",  # loopback, a free port: the HTTP routes run even without a dashboard
            death_timeout=WAIT,
        )


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    cluster = start_cluster()
    with distributed.Client(cluster, timeout=WAIT) as connected:
        yield connected
    cluster.close(timeout=WAIT)


def local_scan(url: str, options: Options | None = None) -> list[Record]:
    """What ``histfix scan`` examines, record by record (the local runner, one process)."""
    options = options or Options()
    records: list[Record] = []
    with open_source(url) as source:
        repair_source(source, options, backup=None, batch_size=7, on_record=records.append)
    return records


def summary_of(records: list[Record]) -> Summary:
    summary = Summary()
    for record in records:
        summary.add(record)
    return summary


def dask_scan(client: Any, bag: Any, **options: Any) -> tuple[list[Record], Summary]:
    records = on_dask.examine_bag(bag, **options)
    streamed = list(on_dask.iter_records(records, client, timeout=WAIT))
    summary = client.compute(on_dask.summarize(records)).result(timeout=WAIT)
    return streamed, summary


SMALL_PARTS: dict[str, dict[str, int]] = {
    "jsonl": {"blocksize": 3000},
    "dir": {"files_per_partition": 6},
    "sqlite-text": {"rows_per_partition": 7},
    "sqlite-blob": {"rows_per_partition": 7},
}


@pytest.mark.parametrize("provider", [None, "anthropic"])
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_the_dask_scan_is_the_local_scan_on_every_file_and_sqlite_store(
    client: Any, tmp_path: Path, kind: str, provider: str | None
) -> None:
    store = StoreUnderTest(kind, tmp_path)
    want = local_scan(store.url, Options(provider=provider))
    bag = on_dask.read_source(store.url, **SMALL_PARTS[kind])
    assert bag.npartitions > 5  # split for real, so order across partitions is tested
    records, summary = dask_scan(client, bag, provider=provider)
    assert records == want
    assert summary == summary_of(want)
    assert summary.would_change and summary.not_loaded and summary.worst


@pytest.mark.parametrize("column_type", ["jsonb", "bytea"])
def test_the_dask_scan_is_the_local_scan_on_a_postgresql_table(
    client: Any, pg_server: PgServer, column_type: str
) -> None:
    from test_postgres_cli import PgStore

    store = PgStore(pg_server, column_type)
    want = local_scan(store.url)
    bag = on_dask.read_table(store.url, rows_per_partition=9)
    assert bag.npartitions >= 9
    records, summary = dask_scan(client, bag)
    assert records == want and summary == summary_of(want)


def test_a_table_splits_at_its_key_order_whatever_the_key_type(client: Any, pg_server: PgServer) -> None:
    # integer keys sort as numbers (2 before 10), text keys as the database collates them
    rows = [(key, '[{"kind": "request", "parts": []}]') for key in range(1, 41)] + [(41, None)]
    table = pg_server.make_table("jsonb", rows, key_type="bigint")
    url = pg_server.url(table)
    for partitions in (1, 3, 7, 40, 100):
        bag = on_dask.read_table(url, partitions=partitions)
        assert bag.npartitions == min(partitions, 41)
        stored = client.compute(bag).result(timeout=WAIT)
        assert [s.key for s in stored] == [str(key) for key in range(1, 42)]
        assert stored[-1].error is not None and "NULL" in stored[-1].error
    empty = pg_server.make_table("jsonb", [])
    assert client.compute(on_dask.read_table(pg_server.url(empty))).result(timeout=WAIT) == []


def test_an_sqlite_table_with_integer_keys_splits_in_numeric_order(client: Any, tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "n.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE chats (id INTEGER PRIMARY KEY, messages TEXT)")
        db.executemany("INSERT INTO chats VALUES (?, '[]')", [(key,) for key in range(1, 31)])
    db.close()
    url = f"sqlite:///{path}?table=chats&key=id&column=messages"
    bag = on_dask.read_table(url, rows_per_partition=4)
    assert bag.npartitions == 8
    assert [s.key for s in client.compute(bag).result(timeout=WAIT)] == [str(k) for k in range(1, 31)]


def test_jsonl_blocks_number_lines_as_the_file_source_does(client: Any, tmp_path: Path) -> None:
    bare = to_json([req(user("hi")), resp(call("f", "c1", {}))])  # a call with no result
    lines = [bare, b"", b'{"id": "x", "messages": []}', bare + b"\r", b"   ", bare, b"[1]", bare]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines))  # no newline after the last line
    want = local_scan(str(path))
    assert [r.key for r in want] == ["1", "x", "4", "6", "7", "8"]
    for blocksize in (20, 100, 1000, None):  # 20: a line per block, and many empty ones
        bag = on_dask.read_jsonl(str(path), blocksize=blocksize)
        assert dask_scan(client, bag)[0] == want
    # a file:// URL and a compressed copy read the same (a .gz file is one block)
    assert dask_scan(client, on_dask.read_jsonl(path.as_uri(), blocksize=40))[0] == want
    packed = tmp_path / "mixed.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    bag = on_dask.read_jsonl(str(packed))
    assert bag.npartitions == 1
    assert dask_scan(client, bag)[0] == want


def test_several_jsonl_files_keep_their_own_line_numbers_and_can_name_their_path(
    client: Any, tmp_path: Path
) -> None:
    for name in ("a", "b"):
        write_jsonl(tmp_path / f"{name}.jsonl", dict(list(histories().items())[:12]))
    glob = str(tmp_path / "*.jsonl")
    plain = client.compute(on_dask.read_jsonl(glob, blocksize=500)).result(timeout=WAIT)
    named = client.compute(on_dask.read_jsonl(glob, blocksize=500, include_path=True)).result(timeout=WAIT)
    one = [s.key for s in client.compute(on_dask.read_jsonl(str(tmp_path / "a.jsonl"))).result(timeout=WAIT)]
    assert [s.key for s in plain] == one + one
    assert [s.key for s in named] == [f"{tmp_path / n}.jsonl:{k}" for n in "ab" for k in one]


def test_any_bag_of_key_and_bytes_pairs_is_examined_and_bad_items_are_named(client: Any) -> None:
    pairs = list(histories().items())
    bag = dask_bag.from_sequence(pairs, npartitions=4)
    records, _ = dask_scan(client, bag, include_pending=True)
    assert records == [examine(k, v, Options(include_pending=True)) for k, v in pairs]
    with pytest.raises(TypeError, match="k: a stored history is bytes, not str"):
        client.compute(on_dask.examine_bag(dask_bag.from_sequence([("k", "[]")]))).result(timeout=WAIT)
    with pytest.raises(ValueError, match="unknown provider"):
        on_dask.examine_bag(bag, provider="no-such-provider")


def test_bad_arguments_and_missing_stores_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="rows_per_partition must be a whole number of at least 1, not 0"):
        on_dask.read_table("sqlite:///x.db?table=t&key=k&column=c", rows_per_partition=0)
    with pytest.raises(ValueError, match=r"no SQLite file at"):
        on_dask.read_table(f"sqlite:///{tmp_path}/none.db?table=t&key=k&column=c")
    with pytest.raises(ValueError, match="no such directory"):
        on_dask.read_directory(tmp_path / "none")
    with pytest.raises(ValueError, match="cannot read it"):
        on_dask.read_jsonl(str(tmp_path / "none.jsonl"))


def test_workers_on_another_release_are_refused_by_name(client: Any) -> None:
    on_dask.check_workers(client)

    def pretend(version: str) -> None:
        import histfix

        histfix.__version__ = version

    import histfix

    client.run(pretend, "0.0.1-other")
    try:
        with pytest.raises(
            ValueError, match=r"Dask worker tcp://127\.0\.0\.1:\d+ runs .* with histfix 0\.0\.1-other"
        ):
            on_dask.check_workers(client)
    finally:
        client.run(pretend, histfix.__version__)
    on_dask.check_workers(client)


# --- faults ------------------------------------------------------------------------------------


def big_jsonl(tmp_path: Path, copies: int = 12) -> Path:
    stored = {f"{k}-{i}": v for i in range(copies) for k, v in histories().items()}
    return write_jsonl(tmp_path / "big.jsonl", stored)


def worker_pids(client: Any) -> dict[str, int]:
    return dict(client.run(os.getpid))


def test_a_worker_killed_mid_scan_is_replaced_and_the_scan_completes_unchanged(tmp_path: Path) -> None:
    path = big_jsonl(tmp_path)
    want = local_scan(str(path), Options(provider="anthropic"))
    cluster = start_cluster()
    try:
        with distributed.Client(cluster, timeout=WAIT) as client:
            records = on_dask.examine_bag(
                on_dask.read_jsonl(str(path), blocksize=20_000), provider="anthropic"
            )
            stream = on_dask.iter_records(records, client, timeout=WAIT)
            got = [next(stream)]  # the scan is under way on both workers
            victim = sorted(worker_pids(client).values())[0]
            os.kill(victim, signal.SIGKILL)
            got += list(stream)
            assert got == want
            assert victim not in worker_pids(client).values()  # its nanny started a new one
    finally:
        cluster.close(timeout=WAIT)


def kill_a_busy_worker(client: Any, stop: threading.Event) -> None:
    """Kill the first worker the scheduler has work on, once (the scan's task on it is lost)."""
    pids = worker_pids(client)
    while not stop.is_set():
        busy = [address for address, tasks in client.processing().items() if tasks]
        if busy:
            os.kill(pids[busy[0]], signal.SIGKILL)
            return
        time.sleep(0.005)


def test_a_scan_whose_work_dies_with_its_workers_ends_in_one_line_without_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = big_jsonl(tmp_path)
    # no second chance for a task on a worker that died: the scan cannot complete
    cluster = start_cluster(**{"distributed.scheduler.allowed-failures": 0})
    stop = threading.Event()
    try:
        with distributed.Client(cluster, timeout=WAIT) as client:
            killer = threading.Thread(target=kill_a_busy_worker, args=(client, stop), daemon=True)
            killer.start()
            status = main(["scan", str(path), "--dask", cluster.scheduler_address, "--provider", "anthropic"])
            stop.set()
            killer.join(WAIT)
    finally:
        cluster.close(timeout=WAIT)
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""  # no summary: nothing partial is shown as complete
    assert err.startswith("histfix: the Dask cluster lost the workers running this scan (")
    assert err.endswith("it did not complete, so nothing is summarized\n") and err.count("\n") == 1


# --- the command line --------------------------------------------------------------------------


def without_timing(out: str) -> str:
    """The scan's output but its first line's seconds and rate, which differ run to run."""
    first, _, rest = out.partition("\n")
    return first.split(" (", 1)[0] + "\n" + rest


@pytest.mark.parametrize("kind", ["jsonl", "dir", "sqlite-blob"])
def test_histfix_scan_dask_prints_what_the_local_scan_prints(
    client: Any, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest(kind, tmp_path)
    address = client.scheduler.address
    for extra in ([], ["--jsonl"], ["--provider", "gemini", "--include-pending"]):
        local_status = main(["scan", store.url, "--jobs", "1", *extra])
        local = capsys.readouterr()
        status = main(["scan", store.url, "--dask", address, *extra])
        on_cluster = capsys.readouterr()
        assert status == local_status == 1
        assert on_cluster.err == local.err
        if "--jsonl" in extra:
            assert on_cluster.out == local.out
        else:
            assert without_timing(on_cluster.out) == without_timing(local.out)


def test_histfix_scan_dask_reports_null_keys_as_the_local_scan(
    client: Any, pg_server: PgServer, capsys: pytest.CaptureFixture[str]
) -> None:
    table = f"t_{uuid.uuid4().hex[:12]}"
    pg_server.execute(f"CREATE TABLE {table} (id text UNIQUE, messages jsonb)")
    pg_server.execute(f"INSERT INTO {table} VALUES ('a', '[]'), (NULL, '[]'), (NULL, '[]')")
    pg_server.execute(f"GRANT SELECT ON {table} TO {USER}")
    url = pg_server.url(table)
    local_status = main(["scan", url, "--jsonl", "--jobs", "1"])
    local = capsys.readouterr()
    status = main(["scan", url, "--jsonl", "--dask", client.scheduler.address])
    on_cluster = capsys.readouterr()
    assert (status, on_cluster.out, on_cluster.err) == (local_status, local.out, local.err)
    assert '"rows": 2' in on_cluster.out and "NULL key" in on_cluster.err


def test_histfix_scan_dask_local_starts_its_own_cluster(tmp_path: Path) -> None:
    store = StoreUnderTest("jsonl", tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "histfix", "scan", store.url, "--dask", "local", "--jobs", "2", "--jsonl"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    local = subprocess.run(
        [sys.executable, "-m", "histfix", "scan", store.url, "--jobs", "1", "--jsonl"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (local.returncode, local.stdout, local.stderr)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--dask", "local", "--against", "1.0.0", "--include-pending"], "--include-pending does not apply"),
        (["--dask", "tcp://127.0.0.1:8786", "--jobs", "2"], "--jobs applies to --dask local only"),
        (["--dask", "local", "--batch-size", "9"], "--batch-size does not apply with --dask"),
        (["--dask", "local", "--provider", "nope"], "--provider: unknown provider"),
    ],
)
def test_histfix_scan_dask_refuses_what_does_not_apply_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    store = StoreUnderTest("jsonl", tmp_path)
    assert main(["scan", store.url, *arguments]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"histfix: {message}") and err.count("\n") == 1


def test_a_scheduler_nobody_runs_is_one_line_within_the_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from histfix._cli import shared

    monkeypatch.setattr(shared, "DASK_CONNECT_TIMEOUT", 2)

    with socket.socket() as probe:  # a free port, closed again: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = StoreUnderTest("jsonl", tmp_path)
    started = time.monotonic()
    assert main(["scan", store.url, "--dask", f"tcp://127.0.0.1:{port}"]) == 2
    assert time.monotonic() - started < 30
    err = capsys.readouterr().err
    assert err.startswith(f"histfix: --dask tcp://127.0.0.1:{port}: cannot reach the Dask scheduler (")
    assert err.count("\n") == 1


def test_without_dask_installed_the_option_says_what_to_install(tmp_path: Path) -> None:
    store = StoreUnderTest("jsonl", tmp_path)
    hide = "import sys; sys.modules.update(dask=None, distributed=None); "
    run = "from histfix._cli.commands import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", hide + run, "scan", store.url, "--dask", "local"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
        cwd=ROOT,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "histfix: --dask needs Dask: pip install 'histfix[dask]'\n"


def test_the_docs_example_script_runs_as_a_user_runs_it(tmp_path: Path) -> None:
    """docs/dask.md's script, saved as a file beside a copy of examples/ and run with python."""
    from dsl import docs_block

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    script = tmp_path / "scan_on_dask.py"
    script.write_text(docs_block("LocalCluster("))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=WAIT, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("4 histories, 4 would change: ['aborted_mid_tool', ")


# --- the upgrade check on Dask (histfix.upgrade.dask, ``histfix scan --against R --dask``) ---------------

WHEELHOUSE = Path(os.environ.get("HISTFIX_WHEELHOUSE", ROOT / "wheelhouse"))
#: The release checked against: its environment is built by the workers from the wheelhouse.
AGAINST = "1.107.10"


def _why_no_environment() -> str | None:
    from histfix._compare.environments import CompareError, find_uv

    if not (WHEELHOUSE / "inputs.json").exists():
        return f"needs a built wheelhouse at {WHEELHOUSE} (`nox -s wheelhouse`, or set HISTFIX_WHEELHOUSE)"
    try:
        find_uv()
    except CompareError:
        return "needs uv (pip install 'histfix[compare]')"
    return None


@pytest.mark.skipif(_why_no_environment() is not None, reason=_why_no_environment() or "")
def test_the_upgrade_check_on_dask_is_the_local_one_each_worker_building_or_reusing_the_environment(
    client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from histfix.upgrade import check_upgrade
    from histfix.upgrade import dask as upgrade_dask

    cache = tmp_path / "envs"  # empty: the workers build the release, one of them, the other waits
    store = StoreUnderTest("jsonl", tmp_path)
    bag = on_dask.read_source(store.url, blocksize=3000)
    assert bag.npartitions > 5
    parts = upgrade_dask.check_bag(bag, [AGAINST], cache=cache, find_links=WHEELHOUSE)
    on_cluster: list[Any] = []
    streamed = on_dask.iter_records(parts, client, timeout=WAIT * 3)
    result = upgrade_dask.gather(
        streamed, [AGAINST], on_record=lambda record: on_cluster.append(record.as_json())
    )
    client.run(upgrade_dask.stop_probes)
    assert (cache / AGAINST / "histfix-compare.json").exists()
    here: list[Any] = []
    with open_source(store.url) as source:
        local = check_upgrade(
            source,
            [AGAINST],
            cache=cache,
            find_links=WHEELHOUSE,
            on_record=lambda record: here.append(record.as_json()),
        )
    assert on_cluster == here
    assert vars(result.releases[AGAINST]) == vars(local.releases[AGAINST])
    assert result.breaking and not result.failed

    # and on the command line, against the same cluster: the records the local check made
    argv = ["scan", store.url, "--against", AGAINST, "--cache-dir", str(cache), "--jsonl"]
    assert main([*argv, "--find-links", str(WHEELHOUSE), "--dask", client.scheduler.address]) == 1
    out, err = capsys.readouterr()
    assert err == "" and [json.loads(line) for line in out.splitlines()] == here


@pytest.mark.skipif(_why_no_environment() is not None, reason=_why_no_environment() or "")
def test_a_release_the_workers_cannot_install_is_one_line_and_the_others_go_on(
    client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StoreUnderTest("jsonl", tmp_path)
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    argv = ["scan", store.url, "--against", "2.9.2", "--dask", client.scheduler.address]
    assert main([*argv, "--cache-dir", str(tmp_path / "envs"), "--find-links", str(empty)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("histfix: --against 2.9.2: cannot install pydantic-ai-slim==2.9.2 from ")
    assert err.endswith("; the other releases go on\n") and err.count("\n") == 1
    assert "-> 2.9.2: not checked: cannot install" in out
