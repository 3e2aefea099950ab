"""Benchmark: ``histfix.load_json`` beside the floor, ``ModelMessagesTypeAdapter.validate_json``.

Not a test: run with a release installed and histfix importable, e.g.
``PYTHONPATH=src python benchmarks/bench_load.py`` (``--sizes 1 10 67`` in MB, ``--runs 5``,
``--clock cpu``). Loading is the first step of every histfix command, so it should cost what
pydantic-ai's own loader costs.

The histories have a realistic shape: conversations of several turns (the structure of
``tests/support/generate.py``'s ``random_conversation``) with prompts, answers and tool arguments of a
few hundred characters, some non-ASCII, and tool results of one to four kilobytes, as text or as
structured search results. Three kinds of text are timed:

* ``plain``: what every release from 1.0.0 writes and loads as it is;
* ``retried``: the same with one tool result as 2.60+ write a retry (``outcome='retried'``),
  which 1.0-2.59 must convert, so there ``load_json`` goes the converting way at once;
* ``unknown``: the same with one ``outcome`` no release has (``'cancelled'``, as a future release
  might write): 1.67+ reject the text, so ``load_json`` pays a failed ``validate_json`` before
  converting (1.0-1.66 have no ``outcome`` and load it as it is).

Three contenders per text, interleaved in rotating order, median of ``--runs`` (25 runs at 1 MB,
where one run is short enough for the machine's noise to matter): ``validate_json`` (the floor),
``load_json``, and ``converting`` (parse, convert every part, validate: the only way ``load_json``
loaded before it tried the release's own loader first). ``validate_json`` is skipped on a text
the release rejects. ``check`` is what ``load_json`` adds to the floor when nothing needs
converting: deciding that (nothing where the release keeps ``outcome='retried'``, a scan of
the text for that value before 2.60). The JSON records on stderr add the minimum of the runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from pydantic_ai import messages as pai

from histfix import _portable
from histfix._release.installed import current

from dsl import Json
from generate import random_conversation

PROSE = (
    "the of and to in is that for it as with was on be by this are from at or an have not which "
    "result order customer invoice weather Paris forecast temperature report shipment delayed "
    "résumé café naïve São Paulo München 東京 ✓ search query document section summary table row"
)
WORDS = PROSE.split()


def words(rng: random.Random, low: int, high: int) -> str:
    """Prose of ``low`` to ``high`` characters."""
    length = rng.randint(low, high)
    out: list[str] = []
    size = 0
    while size < length:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def tool_result(rng: random.Random) -> Any:
    """One to four kilobytes: a page of text, or search results as objects."""
    if rng.random() < 0.5:
        return words(rng, 1000, 4000)
    return {
        "results": [
            {
                "title": words(rng, 20, 60),
                "url": f"https://example.com/{rng.randrange(10**6)}",
                "snippet": words(rng, 100, 300),
                "score": rng.random(),
            }
            for _ in range(rng.randint(3, 8))
        ],
        "total": rng.randint(10, 1000),
    }


def conversation(n: int) -> list[Json]:
    """``random_conversation(n)``'s turns with realistic content and ids of their own."""
    rng = random.Random(n)
    history = random_conversation(n)
    for message in history:
        if message["kind"] == "response":
            message["usage"] = {"input_tokens": rng.randint(100, 9000), "output_tokens": rng.randint(10, 900)}
            message["provider_name"] = "openai"
        for part in message["parts"]:
            kind = part["part_kind"]
            if "tool_call_id" in part:
                part["tool_call_id"] = f"call_{n}_{part['tool_call_id']}"
            if kind == "user-prompt":
                part["content"] = words(rng, 50, 600)
            elif kind == "system-prompt":
                part["content"] = words(rng, 200, 1500)
            elif kind == "text":
                part["content"] = words(rng, 200, 2000)
            elif kind == "tool-call":
                part["args"] = {"query": words(rng, 20, 200), "limit": rng.randint(1, 50), "lang": "en"}
            elif kind == "tool-return":
                part["content"] = tool_result(rng)
            elif kind == "retry-prompt" and part.get("tool_name"):
                part["content"] = words(rng, 40, 200)
    return history


def history_bytes(megabytes: float) -> tuple[list[Json], bytes]:
    """Whole conversations until the JSON reaches ``megabytes``."""
    target = int(megabytes * 1_000_000)
    history: list[Json] = []
    size, n = 2, 0
    while size < target:
        chunk = conversation(n)
        size += len(json.dumps(chunk, ensure_ascii=False).encode()) + 2
        history += chunk
        n += 1
    return history, json.dumps(history, ensure_ascii=False).encode()


def with_one_outcome(history: list[Json], outcome: str) -> bytes:
    """The history with its last tool result given ``outcome``."""
    last = max(
        (i, j)
        for i, message in enumerate(history)
        for j, part in enumerate(message["parts"])
        if part["part_kind"] == "tool-return"
    )
    copy = [{**m, "parts": list(m["parts"])} for m in history]
    part = dict(copy[last[0]]["parts"][last[1]])
    part.update(content="Unknown city: did you mean 'Paris'?", outcome=outcome)
    copy[last[0]]["parts"][last[1]] = part
    return json.dumps(copy, ensure_ascii=False).encode()


CLOCK: Callable[[], float] = time.perf_counter


def timed(fn: Callable[[], object]) -> float:
    gc.collect()  # every contender starts from the same heap; GC stays on, as in an application
    start = CLOCK()
    fn()
    return CLOCK() - start


def measure(contenders: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Interleaved runs; the order rotates from run to run, so no contender always follows another."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for run in range(runs):
        for name in names[run % len(names) :] + names[: run % len(names)]:
            times[name].append(timed(contenders[name]))
    return times


def loads(data: bytes) -> bool:
    try:
        pai.ModelMessagesTypeAdapter.validate_json(data)
    except ValueError:
        return False
    return True


def row(name: str, size: int, messages: int, median: dict[str, float]) -> str:
    """One line of the table: milliseconds, and each as a multiple of ``validate_json``."""
    floor = median.get("validate_json")
    cells = [f"{name:>8} {size / 1e6:>6.1f} {messages:>7}"]
    cells.append(f"{floor * 1e3:>14.0f}" if floor else f"{'rejects':>14}")
    cells.append(f"{median['check'] * 1e3:>6.1f}")
    for key, width in (("load_json", 10), ("converting", 11)):
        cells.append(f"{median[key] * 1e3:>{width}.0f}")
        cells.append(f"{median[key] / floor:>5.2f}x" if floor else f"{'-':>6}")
    return " ".join(cells)


def main(argv: list[str]) -> None:
    global CLOCK
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 10, 67], help="MB")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args(argv)
    if args.clock == "cpu":
        CLOCK = time.process_time
    print(
        f"pydantic-ai {current()[1]}, Python {platform.python_version()}, {args.clock} clock, median of {args.runs} runs (more below 5 MB)"
    )
    print(
        f"{'text':>8} {'MB':>6} {'msgs':>7} {'validate_json':>14} {'check':>6} {'load_json':>10} {'ratio':>6} {'converting':>11} {'ratio':>6}"
    )
    for megabytes in args.sizes:
        history, plain = history_bytes(megabytes)
        texts = {
            "plain": plain,
            "retried": with_one_outcome(history, "retried"),
            "unknown": with_one_outcome(history, "cancelled"),
        }
        del history
        for name, data in texts.items():
            floor_loads = loads(data)
            assert _portable.load_json(data) == _portable._load_converting(data)
            contenders: dict[str, Callable[[], object]] = {
                "load_json": lambda d=data: _portable.load_json(d),
                "converting": lambda d=data: _portable._load_converting(d),
            }
            if floor_loads:
                contenders["validate_json"] = lambda d=data: pai.ModelMessagesTypeAdapter.validate_json(d)
            times = measure(contenders, max(args.runs, min(25, int(25 / megabytes))))
            median = {k: statistics.median(v) for k, v in times.items()}
            median["check"] = statistics.median(
                timed(lambda d=data: _portable._may_need_conversion(d)) for _ in range(5)
            )
            messages = len(_portable.load_json(data))
            print(row(name, len(data), messages, median))
            record = {
                "release": current()[1],
                "text": name,
                "bytes": len(data),
                "messages": messages,
                "clock": args.clock,
                "median_s": median,
                "min_s": {k: min(v) for k, v in times.items()},
            }
            print(json.dumps(record), file=sys.stderr)
        del texts


if __name__ == "__main__":
    main(sys.argv[1:])
