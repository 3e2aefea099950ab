"""Benchmark: ``histfix scan`` throughput against the floor, one worker against two, with a provider.

Not a test. Run with a release installed: ``python benchmarks/bench_store.py [--sizes 10000 100000]``.

The store is a JSONL file of realistic histories: provider-valid conversations of 3 to 300
messages (log-uniform, so most are short and some long), a tenth of them broken the ways the
corpus shows (an aborted tool call, a trimmed head leaving an orphaned result, a crash that
stored two requests in a row, a retried call left open), with ids unique per conversation.

Timed in CPU seconds (the machine this is run on may be shared; wall time would measure the
neighbours), each on the same histories: the floor (``ModelMessagesTypeAdapter.validate_json`` of each
history, in memory: the least a scan must do), the scan with one worker (the whole command path:
reading the file, the record per history, the summary) and with two, and the scan with
``--provider``. Two workers are timed by their CPU and this process's: on two idle cores the
scan takes the larger of half their sum and this process's own (the wall time on the machine at
hand is printed beside it). A breakdown then times each step of the record on its own, which says where the
time over the floor goes.

``--postgres`` also loads the same histories into a PostgreSQL table (``--postgres-column``, jsonb
by default: what pydantic-ai's storage docs suggest) and times its scan beside the JSONL scan,
with one worker each, and reading alone from each source. ``--postgres`` alone starts a throwaway
server the way the tests do (Debian's postgresql package); ``--postgres postgresql://...`` uses a
database you name, creating and dropping a table of its own there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import random
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# tests/support: the DSL, the generator and postgres_server.py (the throwaway server of --postgres)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from pydantic_ai.messages import ModelMessagesTypeAdapter

import histfix
from histfix.store import open_source
from histfix.store._record import Options, examine
from histfix.store._runner import repair_source

from dsl import Json, call, req, resp, ret, user
from generate import random_conversation


def conversation(rng: random.Random, number: int, longest: int = 300) -> list[Json]:
    """A valid conversation of 3 to ``longest`` messages (log-uniform), ending on a final answer."""
    target = int(math.exp(rng.uniform(math.log(3), math.log(longest))))
    messages: list[Json] = []
    part = 0
    while len(messages) < target:
        chunk = random_conversation(rng.randrange(1 << 30))
        for message in chunk:  # ids unique per conversation, as providers issue them
            for p in message["parts"]:
                if "tool_call_id" in p:
                    p["tool_call_id"] = f"{p['tool_call_id']}-{part}"
        messages += chunk
        part += 1
    return messages


def broken(rng: random.Random, messages: list[Json]) -> list[Json]:
    """The damage the corpus shows most, one kind per history."""
    how = rng.randrange(4)
    if how == 0:  # aborted mid-tool: a call stored, its results never were, a new prompt after it
        return [
            *messages,
            resp(call("search", f"lost-{rng.random()}", {"q": "x"}), model_name="m"),
            req(user("and?")),
        ]
    if how == 1:  # a trimmed slice: the head cut between a call and its result
        cut = next(
            (i for i, m in enumerate(messages) if any(p["part_kind"] == "tool-return" for p in m["parts"])), 0
        )
        return messages[cut:] if cut else [req(ret("get", "gone", "x")), *messages]
    if how == 2:  # a crash that stored the retry's request twice
        return [*messages, req(user("again")), req(user("again"))]
    return [
        *messages,
        resp(call("get", "open-1", {}), call("put", "open-2", {}), model_name="m"),
        req(ret("get", "open-1", "r")),
        req(user("next")),
    ]


def histories(count: int, seed: int = 7, longest: int = 300) -> Iterator[bytes]:
    """``count`` stored histories, a tenth broken, one at a time (a million need not fit in memory)."""
    rng = random.Random(seed)
    for number in range(count):
        messages = conversation(rng, number, longest)
        if number % 10 == 9:
            messages = broken(rng, messages)
        yield json.dumps(messages).encode()


def build(count: int, seed: int = 7) -> list[bytes]:
    return list(histories(count, seed))


def timed(run: object) -> float:
    """CPU seconds of this process: on a shared machine, wall time measures the neighbours."""
    started = time.process_time()
    run()  # type: ignore[operator]
    return time.process_time() - started


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def each(function: Callable[[Any], object], items: list[Any]) -> None:
    """``function`` of every item, keeping no result: a scan holds one history at a time, and
    holding every loaded history at once would time the garbage collector's passes over them."""
    for item in items:
        function(item)


def floor_of(stored: list[bytes]) -> float:
    return timed(lambda: each(ModelMessagesTypeAdapter.validate_json, stored))


def scan(path: Path, jobs: int, provider: str | None = None) -> float:
    """CPU seconds of a scan in this process (``jobs=1``: all the work is here)."""

    def run() -> None:
        with open_source(str(path)) as source:
            repair_source(source, Options(provider=provider), backup=None, jobs=jobs)

    return timed(run)


def parallel_scan(path: Path, jobs: int) -> tuple[float, float, float]:
    """Wall seconds, this process's CPU and the workers' CPU of a scan with ``jobs`` workers."""
    wall, workers = time.perf_counter(), children_cpu()
    parent = scan(path, jobs)
    return time.perf_counter() - wall, parent, children_cpu() - workers


def sliced(stored: list[bytes], folder: Path, size: int, rounds: int) -> tuple[float, float]:
    """The floor and the one-worker scan in slices of ``size`` histories (a store file each), each
    slice's two timed one after the other, the best of ``rounds`` kept per slice, summed: on a
    shared machine a slice is short enough to find a quiet moment in some round, where a whole
    run of seconds seldom is."""
    slices = []
    for start in range(0, len(stored), size):
        path = folder / f"slice-{start}.jsonl"
        path.write_bytes(b"\n".join(stored[start : start + size]) + b"\n")
        slices.append((stored[start : start + size], path))
    floor = [math.inf] * len(slices)
    one = [math.inf] * len(slices)
    for number in range(rounds):
        for at, (part, path) in enumerate(slices):
            if number % 2:  # alternated, so that neither always runs first
                one[at] = min(one[at], scan(path, 1))
                floor[at] = min(floor[at], floor_of(part))
            else:
                floor[at] = min(floor[at], floor_of(part))
                one[at] = min(one[at], scan(path, 1))
    return sum(floor), sum(one)


def sliced_rows(size: int, in_slices: tuple[float, float] | None) -> list[tuple[str, float, str]]:
    if in_slices is None:
        return []
    floor, one = in_slices
    return [
        (f"floor in slices of {size}", floor, ""),
        (
            f"scan --jobs 1 in slices of {size}",
            one,
            f"{one / floor:.2f}x the floor in slices (target <= 1.3x)",
        ),
    ]


def read_only(url: str) -> float:
    def run() -> None:
        with open_source(url) as source:
            for _ in source.read():
                pass

    return timed(run)


def server_cpu(postmaster: int | None) -> float:
    """CPU seconds a local PostgreSQL server has used: the postmaster and every backend it has
    reaped (a scan's backend exits with its connection). 0 for a server elsewhere."""
    if postmaster is None:
        return 0.0
    time.sleep(0.3)  # the closed connection's backend exits and is reaped
    fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(value) for value in fields[11:15])
    return (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")


def with_server(run: Callable[..., float], postmaster: int | None) -> Callable[..., float]:
    """``run``'s CPU seconds plus the server's, which does a PostgreSQL source's reading."""

    def both(*arguments: object) -> float:
        before = server_cpu(postmaster)
        client = run(*arguments)
        return client + server_cpu(postmaster) - before

    return both


@contextlib.contextmanager
def postgres_table(where: str, stored: list[bytes], column_type: str) -> Iterator[tuple[str, int | None]]:
    """``stored`` in a new table (``id bigint PRIMARY KEY``, the histories in ``column_type``), in
    the database ``where`` names or in a server started for the run (``where == "start"``); yields
    its source string and the local server's postmaster pid (None for a database named), and
    drops the table (or stops the server) after."""
    import psycopg

    server = None
    postmaster = None
    if where == "start":
        from postgres_server import DBNAME, SUPERUSER, start_server

        server = start_server()
        where = server.conninfo(user=SUPERUSER, password=None, dbname=DBNAME)
        postmaster = int((Path(server.executor.datadir) / "postmaster.pid").read_text().split()[0])
    table = f"histfix_bench_{os.getpid()}"
    try:
        with psycopg.connect(where, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, messages {column_type})")
            with conn.cursor().copy(f"COPY {table} (id, messages) FROM STDIN") as copy:
                for number, raw in enumerate(stored):
                    copy.write_row((number, raw if column_type == "bytea" else raw.decode()))
            conn.execute(f"VACUUM ANALYZE {table}")  # as a table that has lived a while
        yield f"{where}?table={table}&key=id&column=messages", postmaster
    finally:
        if server is not None:
            server.executor.stop()
            shutil.rmtree(server.workdir, ignore_errors=True)
        else:
            with psycopg.connect(where, autocommit=True) as conn:
                conn.execute(f"DROP TABLE IF EXISTS {table}")


def compare_postgres(where: str, column_type: str, stored: list[bytes], path: Path, rounds: int) -> None:
    """The PostgreSQL scan beside the JSONL scan of the same histories (target: within 1.5x), in
    CPU seconds: this process's, plus the server's for PostgreSQL when it runs here (`--postgres`
    alone), since the server does part of the reading (jsonb's text form is made there)."""
    size = len(stored)
    with postgres_table(where, stored, column_type) as (url, postmaster):
        best: dict[str, float] = {}
        for _ in range(rounds):
            runs = {
                "jsonl": (scan, path, 1),
                "postgres": (with_server(scan, postmaster), url, 1),
                "read jsonl": (read_only, str(path)),
                "read postgres": (with_server(read_only, postmaster), url),
            }
            for name, (run, *arguments) in runs.items():
                best[name] = min(best.get(name, math.inf), run(*arguments))
    rows = [
        ("scan --jobs 1, JSONL", best["jsonl"], ""),
        (
            f"scan --jobs 1, PostgreSQL {column_type}",
            best["postgres"],
            f"{best['postgres'] / best['jsonl']:.2f}x the JSONL scan (target <= 1.5x)",
        ),
        ("read alone, JSONL", best["read jsonl"], ""),
        (f"read alone, PostgreSQL {column_type}", best["read postgres"], ""),
    ]
    if postmaster is None:
        print("  (the server's CPU is not counted: it runs elsewhere)")
    for name, seconds, note in rows:
        print(f"  {name:<40} {size / seconds:>9,.0f} histories/s  {seconds:7.1f} s CPU  {note}")


def breakdown(stored: list[bytes], provider: str) -> dict[str, float]:
    """Seconds per step of the record over ``stored`` (each step timed on its own)."""
    texts = [raw.decode() for raw in stored]
    histories = [histfix.load_json(t) for t in texts]
    with_provider = Options(provider=provider)
    steps = {
        "validate_json (floor)": lambda: each(ModelMessagesTypeAdapter.validate_json, texts),
        "histfix.load_json": lambda: each(histfix.load_json, texts),
        "classify": lambda: each(histfix.classify, histories),
        "check": lambda: each(histfix.check, histories),
        f"check(provider={provider})": lambda: each(lambda h: histfix.check(h, provider=provider), histories),
        "repair_report (the broken)": lambda: each(histfix.repair_report, histories[9::10]),
        f"repair_report(provider={provider}) (the broken)": lambda: each(
            lambda h: histfix.repair_report(h, provider=provider), histories[9::10]
        ),
        "examine (the record)": lambda: each(lambda raw: examine("k", raw), stored),
        f"examine, provider={provider}": lambda: each(lambda raw: examine("k", raw, with_provider), stored),
    }
    return {name: timed(step) for name, step in steps.items()}


def named_providers(names: list[str]) -> list[str]:
    """``--providers`` as given, or every API and ``any`` for ``all``."""
    if names == ["all"]:
        from histfix._profiles.targets import ANY, PROVIDER_APIS

        return [*PROVIDER_APIS, ANY]
    return list(names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--provider", default="anthropic")
    parser.add_argument(
        "--providers",
        nargs="*",
        default=None,
        metavar="P",
        help="also time the scan with each of these providers beside the scan without "
        "(target <= 2x each); `all`: every API and any",
    )
    parser.add_argument("--no-parallel", action="store_true", help="skip the two-worker scan")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds; the best of each is shown")
    parser.add_argument("--sample", type=int, default=1000, help="histories the breakdown times")
    parser.add_argument(
        "--slices",
        type=int,
        default=0,
        metavar="N",
        help="also time the floor and the scan in slices of N histories, the best of --rounds per slice",
    )
    parser.add_argument(
        "--providers-per-history", nargs="*", default=[], help="more providers for the breakdown"
    )
    parser.add_argument(
        "--postgres",
        nargs="?",
        const="start",
        metavar="CONNINFO",
        help="also scan the histories from a PostgreSQL table (alone: start a throwaway server)",
    )
    parser.add_argument("--postgres-column", default="jsonb", choices=["json", "jsonb", "text", "bytea"])
    parser.add_argument("--no-jsonl-runs", action="store_true", help="only the PostgreSQL comparison")
    args = parser.parse_args()
    info = histfix.backend_info()
    print(
        f"pydantic-ai {info.distribution} {info.version}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    providers = named_providers(args.providers or [])
    for size in args.sizes:
        stored = build(size)
        megabytes = sum(map(len, stored)) / 1e6
        messages = sum(len(json.loads(raw)) for raw in stored[:1000]) / min(size, 1000)
        print(f"\n{size:,} histories, {megabytes:,.0f} MB, about {messages:.0f} messages each")
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "store.jsonl"
            path.write_bytes(b"\n".join(stored) + b"\n")
            if args.postgres:
                compare_postgres(args.postgres, args.postgres_column, stored, path, args.rounds)
            if args.no_jsonl_runs:
                continue
            # Interleaved rounds, the best of each kept: on a shared machine, drift hits all alike.
            best: dict[str, float] = {}
            for _ in range(args.rounds):
                runs = {
                    "floor": (floor_of, stored),
                    "one": (scan, path, 1),
                    "provided": (scan, path, 1, args.provider),
                    **{f"provider {p}": (scan, path, 1, p) for p in providers},
                }
                for name, (run, *arguments) in runs.items():
                    best[name] = min(best.get(name, math.inf), run(*arguments))
                wall_one = time.perf_counter()
                scan(path, 1)
                wall_one = time.perf_counter() - wall_one
                wall_two, parent, workers = (0.0, 0.0, 0.0) if args.no_parallel else parallel_scan(path, 2)
            floor, one, provided = best["floor"], best["one"], best["provided"]
            in_slices = sliced(stored, Path(folder), args.slices, args.rounds) if args.slices else None
            # On two idle cores, two workers and this process (reading, pickling, the summary)
            # finish when the busier core does: all their CPU over two cores, or this process alone.
            two = max((parent + workers) / 2, parent)
        rows = [
            ("floor: validate_json, 1 core", floor, ""),
            ("scan --jobs 1", one, f"{one / floor:.2f}x the floor (target <= 1.3x)"),
            *sliced_rows(args.slices, in_slices),
        ]
        if not args.no_parallel:
            rows.append(
                (
                    "scan --jobs 2 (two idle cores, from CPU)",
                    two,
                    f"{one / two:.2f}x faster than --jobs 1 (target >= 1.7x); "
                    f"CPU: this process {parent:.1f} s, workers {workers:.1f} s",
                )
            )
        for name, seconds in [(args.provider, provided), *((p, best[f"provider {p}"]) for p in providers)]:
            rows.append(
                (f"scan --jobs 1 --provider {name}", seconds, f"{seconds / one:.2f}x the scan (target <= 2x)")
            )
        print("  CPU seconds (process time), the best of the rounds:")
        for name, seconds, note in rows:
            print(f"  {name:<42} {size / seconds:>7,.0f} histories/s  {seconds:7.1f} s  {note}")
        if not args.no_parallel:
            print(
                f"  wall clock on this (shared) machine: --jobs 1 {wall_one:.1f} s, --jobs 2 {wall_two:.1f} s "
                f"({wall_one / wall_two:.2f}x)"
            )
        sample = stored[: min(size, args.sample)]
        if not sample:
            continue
        print(f"  breakdown on {len(sample):,} of them (seconds; a tenth are broken):")
        for provider in [args.provider, *args.providers_per_history]:
            for name, seconds in breakdown(sample, provider).items():
                print(f"    {name:<50} {seconds:7.2f}")


if __name__ == "__main__":
    main()
