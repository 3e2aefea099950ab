"""Benchmark: histfix's walk beside upstream ``repair_messages`` and the floor, on four shapes of damage.

Not a test: run with ``nox -s bench`` (newest pinned release) or ``python benchmarks/bench_repair.py``
with a release installed. Shapes (see the functions below): ``clean`` (nothing to repair),
``sparse`` (10% of conversations lost a result request, 5% lost their head), ``dense`` (a third of
all turns broken, three rotating breaks) and ``adversarial`` (every message an event). The
``floor`` is a bare loop over every part: the least any repair must do.

For every shape and size the outputs are asserted equal first; then floor, histfix and upstream
are timed in interleaved runs with GC off (so drift on a shared machine hits all three alike) and
the minimum and median of the runs are printed, then the growth of each from one size to the next.
Arguments: ``--shapes clean,dense`` and sizes (default 1000 10000 100000 1000000).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import platform
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from pydantic_ai import messages as pai

import histfix
from histfix._repair.forward import forward_walk
from histfix._repair.forward import repair as forward_repair
from histfix._repair.pairing import pair
from histfix._repair.walk import repair_walk

from dsl import Json, call, req, resp, ret, retry, text, to_json, user
from generate import random_conversation

History = list[pai.ModelMessage]


def _load(raw: list[Json], size: int) -> History:
    return pai.ModelMessagesTypeAdapter.validate_json(to_json(raw[:size]))


#: ``--unique-ids``: every conversation of clean/sparse gets ids of its own, as providers issue them.
#: The generator restarts at ``call1`` in each conversation, so by default ids repeat across
#: conversations: harmless to the default repair, but damage for the profiles that need unique ids
#: (Anthropic, Gemini, Bedrock, Mistral rename every reused call with its results).
UNIQUE_IDS = False


def _conversation(n: int) -> list[Json]:
    chunk = random_conversation(n)
    if UNIQUE_IDS:
        for message in chunk:
            for part in message["parts"]:
                if "tool_call_id" in part:
                    part["tool_call_id"] = f"{part['tool_call_id']}c{n}"
    return chunk


def clean(size: int) -> History:
    """Provider-valid conversations back to back: nothing to repair."""
    raw: list[Json] = []
    n = 0
    while len(raw) < size:
        raw += _conversation(n)
        n += 1
    # cut after a final answer, so the cut itself leaves no dangling call
    while raw[size - 1]["kind"] != "response" or raw[size - 1]["parts"][0]["part_kind"] != "text":
        size -= 1
    return _load(raw, size)


def sparse(size: int, seed: int = 0) -> History:
    """The original shape (docs/speed.md): 10% of conversations lost a result request, 5% their head."""
    rng = random.Random(seed)
    raw: list[Json] = []
    n = 0
    while len(raw) < size:
        chunk = _conversation(n)
        n += 1
        roll = rng.random()
        if roll < 0.1 and len(chunk) > 3:  # a crash lost one request of tool results
            del chunk[rng.randrange(2, len(chunk) - 1)]
        elif roll < 0.15:  # an eviction cut the head off: orphaned results
            chunk = chunk[2:]
        raw += chunk
    return _load(raw, size)


def dense(size: int, seed: int = 0) -> History:
    """A third of all turns broken, rotating three breaks; instructions on every request.

    Breaks: a call group followed directly by the next prompt; a partly answered parallel group
    followed by the next prompt; a stale result whose call was evicted. 1-3 parallel calls per
    group, about 8% of the answers tool retries.
    """
    rng = random.Random(seed)
    raw: list[Json] = []
    serial = turn = 0
    at = 0

    def group() -> list[tuple[str, str]]:
        nonlocal serial
        calls = []
        for _ in range(rng.randint(1, 3)):
            serial += 1
            calls.append((rng.choice(["get", "put"]), f"c{serial}"))
        return calls

    def answer(name: str, id_: str) -> Json:
        return (
            retry("fix the args", name=name, id=id_, at=at)
            if rng.random() < 0.08
            else ret(name, id_, "r", at=at)
        )

    while len(raw) < size:
        at = turn * 10 % 3000  # dsl timestamps count seconds within one hour
        broken = turn % 3 == 0
        kind = (turn // 3) % 3
        raw.append(req(user(f"question {turn}", at), instructions="be brief"))
        if broken and kind == 2:  # the call before this result was evicted
            raw.append(req(ret("get", f"evicted{turn}", "stale", at=at), instructions="be brief"))
        for step in range(rng.randint(1, 3)):
            at += 1
            calls = group()
            if broken and kind == 1 and len(calls) == 1:
                calls += group()
            raw.append(resp(*(call(n, i, {"n": at}) for n, i in calls), at=at, model_name="m"))
            last = step == 0
            if broken and kind == 0 and last:
                break  # the result request is lost: the next prompt follows the calls
            answers = [answer(n, i) for n, i in calls]
            if broken and kind == 1 and last:
                answers = answers[: rng.randint(1, len(answers) - 1)]
                raw.append(req(*answers, instructions="be brief"))
                break  # a partial answer, then the next prompt
            raw.append(req(*answers, instructions="be brief"))
        else:
            at += 1
            raw.append(resp(text(f"answer {turn}"), at=at, model_name="m"))
        turn += 1
    return _load(raw, size)


def adversarial(size: int) -> History:
    """Every message an event: orphans, dangling calls and mergeable runs, alternating."""
    raw: list[Json] = []
    n = 0
    while len(raw) < size:
        n += 1
        raw += [
            req(ret("get", f"gone{n}", "stale"), user(f"q{n}")),  # an orphan
            resp(call("get", f"a{n}"), at=n % 3000),  # dangles
            req(user("more")),  # takes the synthesized return
            req(user("and more")),  # merges with the one before
            resp(call("put", f"b{n}"), at=n % 3000),  # dangles
            resp(text("done"), at=n % 3000),  # merges with the one before, after the return
        ]
    return _load(raw, size)


SHAPES: dict[str, Callable[[int], History]] = {
    "clean": clean,
    "sparse": sparse,
    "dense": dense,
    "adversarial": adversarial,
}


def floor(messages: History) -> None:
    """The least any repair must do: touch every part once."""
    for message in messages:
        for part in message.parts:
            part.part_kind  # noqa: B018


def least_pairing(messages: History) -> tuple[dict[str, object], list[object]]:
    """The least any repair must know: which calls are open, and which results answer none
    (exact classes, a dict by id, a list of orphans; nothing about folding or order)."""
    open_calls: dict[str, object] = {}
    orphans: list[object] = []
    for message in messages:
        if message.__class__ is pai.ModelResponse:
            for part in message.parts:
                if part.__class__ is pai.ToolCallPart:
                    open_calls[part.tool_call_id] = part
        else:
            for part in message.parts:
                kind = part.__class__
                if (kind is pai.ToolReturnPart or kind is pai.RetryPromptPart) and open_calls.pop(
                    part.tool_call_id, None
                ) is None:
                    orphans.append(part)
    return open_calls, orphans


def new_objects(messages: History, repaired: History) -> tuple[list[object], list[object]]:
    """The messages and parts of ``repaired`` that are not objects of ``messages``: what the
    output needs built, however a repair builds it."""
    old_messages = set(map(id, messages))
    old_parts = {id(part) for message in messages for part in message.parts}
    built = [message for message in repaired if id(message) not in old_messages]
    made = [part for message in repaired for part in message.parts if id(part) not in old_parts]
    return built, made


def least_objects(built: list[object], made: list[object]) -> list[object]:
    """Those objects built the cheapest way (a bare instance, its dict copied, a parts list) and
    kept, as an output keeps them: no constructor, no validation."""
    new = object.__new__
    kept: list[object] = []
    for message in built:
        clone = new(message.__class__)
        clone.__dict__ = message.__dict__.copy()
        clone.parts = list(message.parts)  # type: ignore[attr-defined]
        kept.append(clone)
    for part in made:
        copy = new(part.__class__)
        copy.__dict__ = part.__dict__.copy()
        kept.append(copy)
    return kept


def bench_bounds(shape: str, sizes: list[int], runs: int) -> None:
    """What any repair that builds its output must do, in floors: the least pairing loop and the
    objects the output needs (issue 13's <= 3x the floor is below their sum where it is above 3)."""
    print(f"\n{shape}: the least work of any repair, in floors")
    print(
        f"{'messages':>9} {'new msgs':>9} {'new parts':>9} {'floor ms':>9} {'pairing':>9} {'objects':>9} {'both':>7} {'histfix':>8}"
    )
    for size in sizes:
        history = SHAPES[shape](size)
        built, made = new_objects(history, forward_repair(history))
        contenders: dict[str, Callable[[], object]] = {
            "floor": lambda h=history: floor(h),
            "pairing": lambda h=history: least_pairing(h),
            "objects": lambda b=built, m=made: least_objects(b, m),
            "histfix": lambda h=history: forward_repair(h),
        }
        low = {k: min(v) for k, v in measure(contenders, runs).items()}
        unit = low["floor"]
        print(
            f"{len(history):>9} {len(built):>9} {len(made):>9} {unit * 1e3:>9.2f} {low['pairing'] / unit:>8.2f}x "
            f"{low['objects'] / unit:>8.2f}x {(low['pairing'] + low['objects']) / unit:>6.2f}x {low['histfix'] / unit:>7.2f}x"
        )
        print(json.dumps({"shape": shape, "bounds": size, "min": low}))
        del history, contenders, built, made


#: The clock ``timed`` reads: wall time by default; ``--clock cpu`` reads the process's CPU time,
#: which time slices lost to other jobs on a shared machine do not inflate.
CLOCK: Callable[[], float] = time.perf_counter


def timed(fn: Callable[[], object]) -> float:
    start = CLOCK()
    fn()
    return CLOCK() - start


def measure(contenders: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Interleaved runs of every contender, GC off while timing."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            for name, fn in contenders.items():
                times[name].append(timed(fn))
    finally:
        gc.enable()
    return times


def import_cost_ms(runs: int = 5) -> float:
    """Cumulative ``-X importtime`` of ``import histfix`` with pydantic-ai already imported (best of runs)."""
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


def peak_extra_bytes_per_part(history: History, repair: Callable[[History], object]) -> float:
    """Peak memory a repair allocates beyond its output list, per part (8 bytes = one reference)."""
    gc.collect()
    tracemalloc.start()
    out = repair(history)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    parts = sum(len(m.parts) for m in history)
    return (peak - sys.getsizeof(out)) / parts


def bench_shape(
    shape: str,
    sizes: list[int],
    upstream: Callable[[History], History] | None,
    runs: int | None = None,
    *,
    phases: bool = False,
) -> None:
    make = SHAPES[shape]
    print(f"\n{shape}")
    print(
        f"{'messages':>9} {'parts':>9} {'events':>8} {'floor ms':>9} {'histfix ms':>11} "
        f"{'(median)':>9} {'upstream ms':>12} {'(median)':>9} {'speed-up':>9} {'vs floor':>9}"
    )
    mins: dict[int, dict[str, float]] = {}
    for size in sizes:
        history = make(size)
        parts = sum(len(m.parts) for m in history)
        events = len(pair(history, True).events)
        # histfix: what repair() runs where upstream is not current (the forward walk, or the
        # general two-walk repair where it stops); "walks": the general repair alone
        settled = forward_walk(history) is not None
        contenders: dict[str, Callable[[], object]] = {
            "floor": lambda h=history: floor(h),
            "histfix": lambda h=history: forward_repair(h),
            "walks": lambda h=history: repair_walk(h),
        }
        if upstream is not None:
            assert forward_repair(history) == upstream(history), f"{shape} {size}: outputs differ"
            contenders["upstream"] = lambda h=history: upstream(h)
        assert forward_repair(history) == repair_walk(history), f"{shape} {size}: the two paths differ"
        if phases:  # the general repair's two walks, timed apart: pairing, then building from that pairing
            made = pair(history, True)
            contenders["pair"] = lambda h=history: pair(h, True)
            contenders["build"] = lambda h=history, p=made: repair_walk(h, pairing=p)
        times = measure(contenders, runs or (9 if size <= 100_000 else 3))
        low = {k: min(v) for k, v in times.items()}
        mid = {k: statistics.median(v) for k, v in times.items()}
        mins[size] = low
        up, up_mid = low.get("upstream", float("nan")), mid.get("upstream", float("nan"))
        print(
            f"{len(history):>9} {parts:>9} {events:>8} {low['floor'] * 1e3:>9.2f} {low['histfix'] * 1e3:>11.2f} "
            f"{mid['histfix'] * 1e3:>9.2f} {up * 1e3:>12.2f} {up_mid * 1e3:>9.2f} "
            f"{up / low['histfix']:>8.2f}x {low['histfix'] / low['floor']:>8.2f}x"
        )
        print(
            f"{'':>9} "
            + ("forward walk settled it" if settled else "forward walk stopped: the general repair ran")
            + f"; the general repair alone: {low['walks'] * 1e3:.2f} ms, {up / low['walks']:.2f}x upstream"
        )
        if phases:
            print(
                f"{'':>9} phases: pair {low['pair'] * 1e3:.2f} ms ({low['pair'] / low['floor']:.2f}x floor), "
                f"build {low['build'] * 1e3:.2f} ms ({low['build'] / low['floor']:.2f}x floor)"
            )
        del history, contenders
    for a, b in itertools.pairwise(sizes):
        growth = {k: mins[b][k] / mins[a][k] for k in mins[a]}
        ratio = growth["histfix"] / growth["floor"]
        print(
            f"growth {a} -> {b}: "
            + ", ".join(f"{k} {v:.2f}x" for k, v in growth.items())
            + f" (histfix/floor growth {ratio:.2f})"
        )
    print(json.dumps({"shape": shape, "min": {str(k): v for k, v in mins.items()}}))


def bench_profiles(shape: str, sizes: list[int], runs: int) -> None:
    """Each provider profile's repair beside the default repair, as users call them (issue 10's bound:
    ``repair(h, provider=P)`` at most 1.5x ``repair(h)`` at 100k messages)."""
    from histfix._profiles.targets import ANY, PROVIDER_APIS

    profiles = [*PROVIDER_APIS, ANY]
    print(f"\n{shape}: repair(h, provider=P) beside repair(h)")
    print(f"{'messages':>9} {'default ms':>11} " + " ".join(f"{p:>16}" for p in profiles))
    for size in sizes:
        history = SHAPES[shape](size)
        contenders: dict[str, Callable[[], object]] = {"default": lambda h=history: histfix.repair(h)}
        for name in profiles:
            assert histfix.repair(history, provider=name) == histfix.repair(history, provider=name)
            contenders[name] = lambda h=history, p=name: histfix.repair(h, provider=p)
        low = {k: min(v) for k, v in measure(contenders, runs).items()}
        cells = [f"{low[p] * 1e3:>8.1f} ({low[p] / low['default']:.2f}x)" for p in profiles]
        print(f"{len(history):>9} {low['default'] * 1e3:>11.1f} " + " ".join(f"{c:>16}" for c in cells))
        print(json.dumps({"shape": shape, "profiles": size, "min": low}))
        del history, contenders


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument(
        "--shapes", default=",".join(SHAPES), help="comma-separated, of: " + ", ".join(SHAPES)
    )
    parser.add_argument("--extras", action="store_true", help="also time trim/check, memory and import cost")
    parser.add_argument(
        "--profiles", action="store_true", help="also time every provider profile beside the default repair"
    )
    parser.add_argument(
        "--only-profiles",
        action="store_true",
        help="time the provider profiles only (no floor/upstream table)",
    )
    parser.add_argument(
        "--unique-ids",
        action="store_true",
        help="clean/sparse: ids unique per conversation, as providers issue them (default: reused)",
    )
    parser.add_argument(
        "--phases", action="store_true", help="also time the walk's pairing and building phases apart"
    )
    parser.add_argument(
        "--bounds",
        action="store_true",
        help="also time the least pairing loop and the objects the output needs, in floors",
    )
    parser.add_argument("--runs", type=int, default=None, help="runs per contender (default 9, 3 at 1M)")
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="cpu: process CPU time (for a shared machine)",
    )
    args = parser.parse_args(argv)
    global CLOCK, UNIQUE_IDS  # switches for the whole run, read by timed() and the shapes
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    UNIQUE_IDS = args.unique_ids
    upstream = getattr(pai, "repair_messages", None)
    info = histfix.backend_info()
    print(
        f"pydantic-ai {info.version}, Python {platform.python_version()}, {platform.machine()}, {args.clock} clock"
        + (", ids unique per conversation" if UNIQUE_IDS else "")
    )
    for shape in args.shapes.split(","):
        if not args.only_profiles:
            bench_shape(shape, args.sizes, upstream, args.runs, phases=args.phases)
        if args.bounds:
            bench_bounds(shape, args.sizes, args.runs or (9 if max(args.sizes) <= 100_000 else 3))
        if args.profiles or args.only_profiles:
            bench_profiles(shape, args.sizes, args.runs or 5)
    if not args.extras:
        return
    history = sparse(min(max(args.sizes), 100_000))
    extras = measure(
        {"trim": lambda: histfix.keep_last_turns(history, 50), "check": lambda: histfix.check(history)}, 9
    )
    print(
        f"\nsparse, {len(history)} messages: "
        + ", ".join(f"{k} {min(v) * 1e3:.2f} ms" for k, v in extras.items())
    )
    print(
        f"peak extra memory per part: histfix {peak_extra_bytes_per_part(history, forward_repair):.1f} B",
        end="",
    )
    if upstream is not None:
        print(f", upstream {peak_extra_bytes_per_part(history, upstream):.1f} B", end="")
    print(" (one reference is 8 B)")
    print(f"import histfix (pydantic-ai already imported): {import_cost_ms():.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
