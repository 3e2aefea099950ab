"""Benchmark: a pydantic-ai ConversationStore as a store: its scan against the JSONL scan, and migrate.

Not a test. Needs pydantic-ai-slim 2.66.0 or newer:
``python benchmarks/bench_conversation_store.py [--scan 10000] [--migrate 100000] [--jobs 1 2]``.

The histories are bench_store.py's (realistic conversations of 3 to 300 messages, a tenth broken).

- **scan**: the same histories in a JSONL file and in an ``InMemoryConversationStore``, each
  scanned with one worker (the whole path: reading, the record per history, the summary), in CPU
  seconds. Reading a conversation is the backend's (``read_records``, then ``read_history`` from
  each head, which the in-memory store answers with a deep copy per entry), so that is timed alone
  too, and the rest (what histfix adds: each history's JSON, the record, the summary) is compared
  with the JSONL scan.
- **migrate**: the histories from a JSONL file into the SQLite backend of
  tests/support/conversation_backends.py, with ``--jobs`` workers each: histories per second of
  wall time, and the CPU of this process (which reads, saves and writes the SQLite file) and of
  the workers (which load and repair).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import histories, timed
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import InMemoryConversationStore

import histfix
from histfix.store import ConversationSource, migrate, open_source, repair_conversations
from histfix.store._record import Options
from histfix.store._runner import repair_source

#: The SQLite backend of tests/support, as the command line names it (its file: CONVERSATION_DB).
TARGET = "py:conversation_backends:sqlite_store"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fill_memory(stored: list[bytes]) -> InMemoryConversationStore:
    store = InMemoryConversationStore()

    async def fill() -> None:
        for number, raw in enumerate(stored):
            await store.save(Conversation(messages=histfix.load_json(raw), conversation_id=f"c{number:07d}"))

    asyncio.run(fill())
    return store


def backend_reading(store: Any) -> float:
    """CPU seconds of the backend answering the reads a scan makes: its records, then each history."""

    async def read() -> None:
        for record in await store.read_records():
            await store.read_history(record.head_id)

    return timed(lambda: asyncio.run(read()))


def compare_scan(count: int, rounds: int) -> None:
    stored = list(histories(count))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chats.jsonl"
        path.write_bytes(b"".join(raw + b"\n" for raw in stored))
        store = fill_memory(stored)
        best: dict[str, float] = {}
        for _ in range(rounds):

            def jsonl() -> None:
                with open_source(str(path)) as source:
                    repair_source(source, Options(), backup=None, jobs=1)

            def conversations() -> None:
                with ConversationSource(store) as source:
                    repair_conversations(source, jobs=1)

            def reading() -> None:
                with ConversationSource(store) as source:
                    for _ in source.read():
                        pass

            for name, run in (("jsonl", jsonl), ("store", conversations), ("source read", reading)):
                best[name] = min(best.get(name, float("inf")), timed(run))
            best["backend"] = min(best.get("backend", float("inf")), backend_reading(store))
    rest = best["store"] - best["backend"]
    print(f"scan of {count:,} histories, one worker, CPU seconds (best of {rounds}):")
    print(f"  JSONL scan:                {best['jsonl']:7.2f} s  ({count / best['jsonl']:,.0f}/s)")
    print(f"  ConversationStore scan:    {best['store']:7.2f} s  ({count / best['store']:,.0f}/s)")
    print(f"    the backend's reading:   {best['backend']:7.2f} s  (read_records + read_history)")
    print(
        f"    as bytes (Source.read):  {best['source read']:7.2f} s  (the backend's, and each history's JSON: what --against reads)"
    )
    print(
        f"    the rest, histfix's:     {rest:7.2f} s  = {rest / best['jsonl']:.2f}x the JSONL scan (target 1.5x)"
    )
    print(f"  the whole scan:            {best['store'] / best['jsonl']:.2f}x the JSONL scan")


def run_migrate(count: int, jobs_list: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chats.jsonl"
        with path.open("wb") as handle:
            for raw in histories(count):
                handle.write(raw + b"\n")
        size = path.stat().st_size
        print(f"migrate of {count:,} histories ({size / 1e6:,.0f} MB of JSONL) into the SQLite test backend:")
        for jobs in jobs_list:
            db = Path(folder) / f"conversations-{jobs}.db"
            # Named as the command line names it: with --jobs 2 each worker opens its own store.
            os.environ["CONVERSATION_DB"] = str(db)
            wall, children = time.perf_counter(), children_cpu()
            parent = time.process_time()
            seen = [0]

            def progress(
                migration: object, outcome: str, started: float = wall, seen: list[int] = seen
            ) -> None:
                seen[0] += 1
                if seen[0] % 10_000 == 0:  # a long run shows its pace as it goes (wall clock)
                    print(f"    {seen[0]:,} after {time.perf_counter() - started:.0f} s", flush=True)

            with open_source(str(path)) as source, ConversationSource(TARGET) as target:
                result = migrate(source, target, write=True, jobs=jobs, on_history=progress)
            parent = time.process_time() - parent
            wall = time.perf_counter() - wall
            workers = children_cpu() - children
            assert result.migrated == count, result
            # On idle cores the run takes the larger of the CPU per core and this process's own.
            idle = max((parent + workers) / jobs, parent)
            print(
                f"  --jobs {jobs}: {count / idle:,.0f} histories/s on {jobs} idle core(s) by CPU "
                f"(this process {parent:.1f} s, workers {workers:.1f} s); {count / wall:,.0f}/s by the "
                f"wall clock here ({wall:.1f} s); {db.stat().st_size / 1e6:,.0f} MB of SQLite"
            )
            db.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scan", type=int, default=10_000, help="histories the scan comparison uses (0: none)"
    )
    parser.add_argument("--migrate", type=int, default=100_000, help="histories to migrate (0: none)")
    parser.add_argument("--jobs", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(
        f"pydantic-ai-slim {histfix.backend_info().version}, Python {platform.python_version()}, "
        f"{platform.machine()}"
    )
    if args.scan:
        compare_scan(args.scan, args.rounds)
    if args.migrate:
        run_migrate(args.migrate, args.jobs)


if __name__ == "__main__":
    main()
