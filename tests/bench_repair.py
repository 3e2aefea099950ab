"""Benchmark: histfix's walk against upstream ``repair_messages`` on the same large histories.

Not a test: run with ``nox -s bench`` (newest pinned release) or ``python tests/bench_repair.py``.
Histories mix multi-turn tool conversations with the damage repair exists for (lost results,
orphaned results, trailing calls). GC is off while timing; each figure is the minimum of
interleaved runs. Pass sizes as arguments to override the defaults (1000 10000 100000).
"""

from __future__ import annotations

import gc
import itertools
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from pydantic_ai import messages as pai

import histfix
from histfix._walk import repair_walk

from dsl import to_json
from generate import random_conversation


def broken_history(size: int, seed: int = 0) -> list[pai.ModelMessage]:
    rng = random.Random(seed)
    raw: list[dict] = []
    n = 0
    while len(raw) < size:
        chunk = random_conversation(n)
        n += 1
        roll = rng.random()
        if roll < 0.1 and len(chunk) > 3:  # a crash lost one request of tool results
            del chunk[rng.randrange(2, len(chunk) - 1)]
        elif roll < 0.15:  # an eviction cut the head off: orphaned results
            chunk = chunk[2:]
        raw += chunk
    return pai.ModelMessagesTypeAdapter.validate_json(to_json(raw[:size]))


def floor(messages: list[pai.ModelMessage]) -> None:
    """The least any repair must do: touch every part once."""
    for message in messages:
        for part in message.parts:
            part.part_kind  # noqa: B018


def best(fn: Callable[[], object], runs: int) -> float:
    gc.collect()
    gc.disable()
    try:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)
    finally:
        gc.enable()


def import_cost_ms(runs: int = 5) -> float:
    """Cumulative ``-X importtime`` of ``import histfix`` with pydantic-ai already imported (best of runs)."""
    import subprocess

    best_us = float("inf")
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import pydantic_ai.messages; import histfix"],
            capture_output=True,
            text=True,
            check=True,
        )
        line = next(row for row in reversed(done.stderr.splitlines()) if row.rstrip().endswith("| histfix"))
        best_us = min(best_us, int(line.split("|")[1]))
    return best_us / 1000


def peak_extra_bytes_per_part(
    history: list[pai.ModelMessage], repair: Callable[[list[pai.ModelMessage]], object]
) -> float:
    """Peak memory a repair allocates beyond its output list, per part (8 bytes = one reference)."""
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    out = repair(history)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    parts = sum(len(m.parts) for m in history)
    return (peak - sys.getsizeof(out)) / parts


def main(sizes: list[int]) -> None:
    has_upstream = hasattr(pai, "repair_messages")
    info = histfix.backend_info()
    print(f"pydantic-ai {info.version}, Python {platform.python_version()}, {platform.machine()}")
    print(
        f"{'messages':>9} {'parts':>9} {'floor ms':>9} {'histfix ms':>11} {'upstream ms':>12} "
        f"{'speed-up':>9} {'vs floor':>9} {'trim ms':>8} {'check ms':>9}"
    )
    results: dict[int, dict[str, float]] = {}
    for size in sizes:
        history = broken_history(size)
        parts = sum(len(m.parts) for m in history)
        runs = 9 if size <= 100_000 else 3
        if has_upstream:
            assert repair_walk(history) == pai.repair_messages(history)  # type: ignore[attr-defined]
        timings: dict[str, list[float]] = {
            "floor": [],
            "histfix": [],
            "upstream": [],
            "trim": [],
            "check": [],
        }
        for _ in range(runs):  # interleaved, so drift hits all of them alike
            timings["floor"].append(best(lambda h=history: floor(h), 1))
            timings["histfix"].append(best(lambda h=history: repair_walk(h), 1))
            if has_upstream:
                timings["upstream"].append(best(lambda h=history: pai.repair_messages(h), 1))  # type: ignore[attr-defined]
            timings["trim"].append(best(lambda h=history: histfix.keep_last_turns(h, 50), 1))
            timings["check"].append(best(lambda h=history: histfix.check(h), 1))
        row = {k: min(v) if v else float("nan") for k, v in timings.items()}
        results[size] = row
        print(
            f"{size:>9} {parts:>9} {row['floor'] * 1e3:>9.2f} {row['histfix'] * 1e3:>11.2f} "
            f"{row['upstream'] * 1e3:>12.2f} {row['upstream'] / row['histfix']:>8.2f}x "
            f"{row['histfix'] / row['floor']:>8.2f}x {row['trim'] * 1e3:>8.2f} {row['check'] * 1e3:>9.2f}"
        )
    for a, b in itertools.pairwise(sizes):
        growth = {k: results[b][k] / results[a][k] for k in ("floor", "histfix", "upstream", "trim", "check")}
        print(f"growth {a} -> {b}: " + ", ".join(f"{k} {v:.2f}x" for k, v in growth.items()))
    memory_probe = broken_history(min(max(sizes), 100_000))
    print(
        f"peak extra memory per part: histfix {peak_extra_bytes_per_part(memory_probe, repair_walk):.1f} B",
        end="",
    )
    if has_upstream:
        print(f", upstream {peak_extra_bytes_per_part(memory_probe, pai.repair_messages):.1f} B", end="")  # type: ignore[attr-defined]
    print(" (one reference is 8 B)")
    print(f"import histfix (pydantic-ai already imported): {import_cost_ms():.1f} ms")
    print(json.dumps({str(k): v for k, v in results.items()}))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000, 10_000, 100_000, 1_000_000])
