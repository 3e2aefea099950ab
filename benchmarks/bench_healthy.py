"""Benchmark: what histfix costs where a history needs nothing, and what a provider profile adds.

Not a test. Run with a release installed: ``python benchmarks/bench_healthy.py [--only check,shapes,agent,profiles]``.
Each target is a ratio of two contenders timed in the same process, interleaved, GC off, the best of
``--rounds`` kept for each (on a shared machine drift then hits both alike):

- ``check``: ``repair(h)`` beside ``check(h)`` on a healthy history (target <= 1.2x), and
  ``repair_report(h)`` beside it, at each ``--sizes``;
- ``shapes``: ``check(h)``, ``repair(h)`` and upstream's ``repair_messages(h)`` on healthy histories of
  four shapes (tool turns, text chat, three parallel calls a turn, the test generator's mixed
  conversations) at each ``--sizes``, in multiples of the floor: loading the history's JSON;
- ``agent``: agent runs (a ``FunctionModel``) over a healthy history, with ``agent_options()`` beside
  without (target <= 1.05x), at ``--agent-size`` messages: the same history continued by each run, a
  conversation each run continues (a tool call a run), and the history reloaded for each run;
- ``profiles``: ``repair(h, provider=P)`` beside ``repair(h)`` for every profile (target <= 3x) on a
  history of ``--profile-size`` messages with one dangling call and ids outside Mistral's format
  (nine letters and digits), and ``check(h, provider=P)`` beside ``check(h)``.

The healthy history alternates a user prompt, a tool call, its result and an answer, with ids as
OpenAI issues them (``call_`` and 24 characters: unique, outside Mistral's format).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from pydantic_ai import messages as pai

import histfix

from dsl import Json, call, req, resp, ret, text, to_json, user

History = list[pai.ModelMessage]


def healthy_json(size: int) -> list[Json]:
    """``size`` messages (rounded down to whole turns) of prompt, call, result, answer."""
    raw: list[Json] = []
    turn = 0
    while len(raw) + 4 <= size:
        call_id = f"call_{turn:024d}"
        at = turn % 3000
        raw += [
            req(user(f"question {turn}", at)),
            resp(call("lookup", call_id, {"q": turn}), at=at, model_name="m"),
            req(ret("lookup", call_id, f"result {turn}", at=at)),
            resp(text(f"answer {turn}"), at=at, model_name="m"),
        ]
        turn += 1
    return raw


def healthy(size: int) -> History:
    return pai.ModelMessagesTypeAdapter.validate_json(to_json(healthy_json(size)))


def chat_json(size: int) -> list[Json]:
    """``size`` messages of a prompt and a text answer, no tools."""
    raw: list[Json] = []
    for turn in range(size // 2):
        raw += [
            req(user(f"question {turn}", turn % 3000)),
            resp(text(f"answer {turn}"), at=turn % 3000, model_name="m"),
        ]
    return raw


def parallel_json(size: int) -> list[Json]:
    """``size`` messages (whole turns) of a prompt, three calls at once, their results, an answer."""
    raw: list[Json] = []
    turn = 0
    while len(raw) + 4 <= size:
        ids = [f"call_{turn:020d}_{k:03d}" for k in range(3)]
        at = turn % 3000
        raw += [
            req(user(f"question {turn}", at)),
            resp(*(call("lookup", i, {"q": turn, "k": k}) for k, i in enumerate(ids)), at=at, model_name="m"),
            req(*(ret("lookup", i, f"result {turn} {k}", at=at) for k, i in enumerate(ids))),
            resp(text(f"answer {turn}"), at=at, model_name="m"),
        ]
        turn += 1
    return raw


def mixed_json(size: int) -> list[Json]:
    """The test generator's provider-valid conversations one after another (tool loops, parallel
    calls, retry prompts, system prompts), cut to whole conversations, ids unique throughout."""
    from generate import random_conversation

    raw: list[Json] = []
    seed = 0
    while True:
        chunk = json.loads(json.dumps(random_conversation(seed)).replace('"call', f'"c{seed}_call'))
        if len(raw) + len(chunk) > size:
            return raw
        raw += chunk
        seed += 1


SHAPES: dict[str, Callable[[int], list[Json]]] = {
    "tools": healthy_json,
    "chat": chat_json,
    "parallel": parallel_json,
    "mixed": mixed_json,
}


def one_dangling(size: int) -> History:
    """A healthy history whose last turn's call lost its result and answer: one dangling call."""
    raw = healthy_json(size)
    del raw[-2:]  # the result request and the answer
    raw.append(req(user("and?")))
    return pai.ModelMessagesTypeAdapter.validate_json(to_json(raw))


def timings(
    contenders: dict[str, Callable[[], object]], rounds: int, prepare: Callable[[str], object] | None = None
) -> dict[str, list[float]]:
    """Each contender's CPU time (this process, GC off) in each of ``rounds`` rounds, the contenders
    run one after another in a round, in reverse order every other round; ``prepare(name)``, if
    given, runs before each run, untimed."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    order = list(contenders)
    gc.collect()
    gc.disable()
    try:
        for round_ in range(rounds):
            for name in order if round_ % 2 == 0 else order[::-1]:
                if prepare is not None:
                    prepare(name)
                started = time.process_time()
                contenders[name]()
                times[name].append(time.process_time() - started)
    finally:
        gc.enable()
    return times


def measure(
    contenders: dict[str, Callable[[], object]], rounds: int, prepare: Callable[[str], object] | None = None
) -> dict[str, float]:
    """The best of ``rounds`` interleaved runs of every contender (see :func:`timings`)."""
    return {name: min(times) for name, times in timings(contenders, rounds, prepare).items()}


def bench_check(sizes: list[int], rounds: int) -> None:
    print("\nhealthy history: repair(h) and repair_report(h) beside check(h) (target repair <= 1.2x)")
    for size in sizes:
        history = healthy(size)
        assert not histfix.check(history)
        assert histfix.repair(history) == history
        low = measure(
            {
                "check": lambda h=history: histfix.check(h),
                "repair": lambda h=history: histfix.repair(h),
                "repair_report": lambda h=history: histfix.repair_report(h),
            },
            rounds,
        )
        print(
            f"  {len(history):>7,} messages: check {low['check'] * 1e3:8.2f} ms, "
            f"repair {low['repair'] / low['check']:.2f}x, repair_report {low['repair_report'] / low['check']:.2f}x"
        )


def bench_shapes(sizes: list[int], rounds: int) -> None:
    """``check(h)``, ``repair(h)`` and upstream's ``repair_messages(h)`` (where the release has it) on
    healthy histories of every shape, beside the floor: loading the history's JSON."""
    upstream = getattr(pai, "repair_messages", None)
    print("\nhealthy histories beside the floor (ModelMessagesTypeAdapter.validate_json of their JSON)")
    print(f"  {'shape':<9} {'messages':>8} {'floor':>9} {'check':>7} {'repair':>7} {'upstream':>9}")
    for shape, build in SHAPES.items():
        for size in sizes:
            data = to_json(build(size))
            history = pai.ModelMessagesTypeAdapter.validate_json(data)
            assert not histfix.check(history), shape
            assert histfix.repair(history) == history, shape
            contenders: dict[str, Callable[[], object]] = {
                "floor": lambda d=data: pai.ModelMessagesTypeAdapter.validate_json(d),
                "check": lambda h=history: histfix.check(h),
                "repair": lambda h=history: histfix.repair(h),
            }
            if upstream is not None:
                assert upstream(history) == history, shape
                contenders["upstream"] = lambda h=history: upstream(h)
            low = measure(contenders, rounds)
            floor = low["floor"]
            beside = f"{low['upstream'] / floor:8.2f}x" if "upstream" in low else f"{'-':>9}"
            print(
                f"  {shape:<9} {len(history):>8,} {floor * 1e3:>6.2f} ms {low['check'] / floor:6.2f}x "
                f"{low['repair'] / floor:6.2f}x {beside}"
            )


def bench_agent(size: int, rounds: int) -> None:
    """Agent runs over a healthy ``size``-message history, with ``agent_options()`` beside without,
    in three scenarios (each contender its own Agent and history, interleaved, ``rounds`` rounds):

    - ``same history``: every run continues the same stored history with a new prompt (one request);
    - ``conversation``: every run continues the conversation the contender's last run returned, and
      the model calls a tool before it answers (two requests a run, the history growing 4 a run);
    - ``reloaded``: every run gets the history loaded anew (new message objects, as from a store), so
      the processor's memory cannot serve it: what one request costs when it reads all of it.
    """
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def answer(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
        return pai.ModelResponse(parts=[pai.TextPart("fine")])

    def call_then_answer(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
        if any(isinstance(part, pai.ToolReturnPart) for part in messages[-1].parts):
            return pai.ModelResponse(parts=[pai.TextPart("fine")])
        return pai.ModelResponse(
            parts=[pai.ToolCallPart("lookup", {"q": len(messages)}, f"t{len(messages)}")]
        )

    def agents(model: Callable[..., pai.ModelResponse]) -> dict[str, Agent[None, str]]:
        built: dict[str, Agent[None, str]] = {
            "without": Agent(FunctionModel(model)),
            "with": Agent(FunctionModel(model), **histfix.agent_options()),
        }
        for agent in built.values():
            agent.tool_plain(lambda q: f"result {q}", name="lookup")
        return built

    data = to_json(healthy_json(size))
    history = pai.ModelMessagesTypeAdapter.validate_json(data)
    plain = agents(answer)
    # the history reaches the model unchanged either way
    for agent in plain.values():
        assert agent.run_sync("next", message_history=history).all_messages()[: len(history)] == history
    same = timings(
        {name: lambda a=a: a.run_sync("next", message_history=history) for name, a in plain.items()}, rounds
    )

    talking = agents(call_then_answer)
    conversations = dict.fromkeys(talking, history)

    def go_on(name: str) -> None:
        conversations[name] = (
            talking[name].run_sync("next", message_history=conversations[name]).all_messages()
        )

    for name in talking:
        go_on(name)  # the first run reads the stored history; the ones measured continue it
    talked = timings({name: lambda n=name: go_on(n) for name in talking}, rounds)
    assert len(conversations["with"]) == len(conversations["without"]) == len(history) + 4 * (rounds + 1)

    stored: dict[str, History] = {}

    def load(name: str) -> None:
        stored[name] = pai.ModelMessagesTypeAdapter.validate_json(data)

    reloaded = timings(
        {
            name: lambda a=a, n=name: a.run_sync("next", message_history=stored.pop(n))
            for name, a in plain.items()
        },
        rounds,
        prepare=load,
    )
    print(
        f"\nagent runs over a healthy {len(history):,}-message history, agent_options() beside without (target <= 1.05x)"
    )
    print("  (best of each; and the median of the rounds' own with/without ratios, which drift cancels)")
    for label, times in (("same history", same), ("conversation", talked), ("reloaded", reloaded)):
        best = {name: min(runs) for name, runs in times.items()}
        paired = statistics.median(a / b for a, b in zip(times["with"], times["without"], strict=True))
        print(
            f"  {label:<13} without {best['without'] * 1e3:7.1f} ms, with {best['with'] / best['without']:.3f}x,"
            f" paired median {paired:.3f}x"
        )


def bench_profiles(size: int, rounds: int) -> None:
    from histfix._profiles.targets import ANY, PROVIDER_APIS

    profiles = [*PROVIDER_APIS, ANY]
    history = one_dangling(size)
    contenders: dict[str, Callable[[], object]] = {
        "repair": lambda: histfix.repair(history),
        "check": lambda: histfix.check(history),
    }
    for name in profiles:
        contenders[f"repair {name}"] = lambda p=name: histfix.repair(history, provider=p)
        contenders[f"check {name}"] = lambda p=name: histfix.check(history, provider=p)
    low = measure(contenders, rounds)
    print(
        f"\n{len(history):,} messages, one dangling call, ids outside Mistral's format: "
        f"repair {low['repair'] * 1e3:.2f} ms, check {low['check'] * 1e3:.2f} ms"
    )
    print(f"  {'provider':<18} {'repair(P)/repair':>17} {'check(P)/check':>15}")
    for name in profiles:
        print(
            f"  {name:<18} {low[f'repair {name}'] / low['repair']:>16.2f}x "
            f"{low[f'check {name}'] / low['check']:>14.2f}x"
        )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        default="check,shapes,agent,profiles",
        help="comma-separated: check, shapes, agent, profiles",
    )
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000], help="check's sizes")
    parser.add_argument("--agent-size", type=int, default=10_000)
    parser.add_argument("--profile-size", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    info = histfix.backend_info()
    print(
        f"pydantic-ai {info.version} (auto: {info.backend}), Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    wanted = args.only.split(",")
    if "check" in wanted:
        bench_check(args.sizes, args.rounds)
    if "shapes" in wanted:
        bench_shapes(args.sizes, args.rounds)
    if "agent" in wanted:
        bench_agent(args.agent_size, args.rounds)
    if "profiles" in wanted:
        bench_profiles(args.profile_size, args.rounds)


if __name__ == "__main__":
    main(sys.argv[1:])
