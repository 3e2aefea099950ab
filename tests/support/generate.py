"""Seeded random stored histories (as JSON) that stress every repair rule.

Deterministic for a given seed, loadable on every release: they use only part kinds and fields
that 1.0.0 already understands (unknown fields are ignored by old releases on load).
"""

from __future__ import annotations

import random

from dsl import Json, call, native_call, native_return, req, resp, ret, retry, system, text, thinking, user


def random_history(seed: int, max_messages: int = 12) -> list[Json]:
    rng = random.Random(seed)
    ids = [f"c{i}" for i in range(rng.randint(1, 6))]  # few ids, so reuse and duplicates happen
    instructions = [None, None, "be brief", "be verbose", ""]
    history: list[Json] = []
    open_ids: list[tuple[str, str]] = []
    for n in range(rng.randint(0, max_messages)):
        at = n + 1
        if rng.random() < 0.5:
            parts: list[Json] = []
            if n == 0 and rng.random() < 0.5:
                parts.append(system("sys", at))
            if open_ids and rng.random() < 0.8:  # answer some open calls, maybe out of order
                answered = rng.sample(open_ids, rng.randint(0, len(open_ids)))
                for name, cid in answered:
                    if rng.random() < 0.15:
                        parts.append(retry("bad args", name=name, id=cid, at=at))
                    else:
                        parts.append(ret(name, cid, f"r{at}", at=at))
                open_ids = [o for o in open_ids if o not in answered]
            for _ in range(rng.choice([0, 0, 1, 2])):
                roll = rng.random()
                if roll < 0.45:
                    parts.insert(rng.randint(0, len(parts)), user(f"u{at}", at))
                elif roll < 0.65:  # an orphan or duplicate or early result
                    parts.insert(rng.randint(0, len(parts)), ret("t", rng.choice([*ids, "zz"]), "x", at=at))
                elif roll < 0.8:
                    parts.insert(rng.randint(0, len(parts)), retry("feedback", id=rng.choice(ids), at=at))
                elif roll < 0.9:
                    parts.insert(
                        rng.randint(0, len(parts)), retry("bad", name="t", id=rng.choice(ids), at=at)
                    )
                else:
                    parts.append(system("late system", at))
            fields: Json = {}
            if rng.random() < 0.3:
                fields["instructions"] = rng.choice(instructions)
            if rng.random() < 0.2:
                fields["metadata"] = rng.choice(
                    [{"k": 1}, {"__pydantic_ai__": {"a": at}}, {"__pydantic_ai__": {"b": at}, "x": 2}]
                )
            if rng.random() < 0.2:
                fields["timestamp"] = at
            history.append(req(*parts, **fields))
        else:
            parts = []
            for _ in range(rng.choice([0, 1, 1, 2, 3])):
                roll = rng.random()
                if roll < 0.55:
                    cid = rng.choice(ids)
                    name = rng.choice(["get", "put", "find"])
                    args = rng.choice([{"q": at}, '{"q": "unfinis', None])
                    parts.append(call(name, cid, args))
                    open_ids.append((name, cid))
                elif roll < 0.75:
                    parts.append(text(f"t{at}"))
                elif roll < 0.85:
                    parts.append(thinking(f"th{at}"))
                else:
                    nid = f"n{at}"
                    parts.append(native_call("web_search", nid))
                    if rng.random() < 0.5:
                        parts.append(native_return("web_search", nid, at=at))
            provider = (
                {}
                if rng.random() < 0.5
                else rng.choice(
                    [{"model_name": "m"}, {"provider_name": "p"}, {"provider_response_id": f"r{at}"}]
                )
            )
            history.append(resp(*parts, at=at, **provider))
    return history


def random_conversation(seed: int, max_turns: int = 8) -> list[Json]:
    """A provider-valid multi-turn conversation: tool loops, parallel calls, retries, late answers."""
    rng = random.Random(seed)
    history: list[Json] = []
    at = 0
    serial = 0
    for turn in range(rng.randint(1, max_turns)):
        at += 1
        head = [system("be helpful", at)] if turn == 0 else []
        history.append(req(*head, user(f"question {turn}", at)))
        for _step in range(rng.choice([0, 1, 1, 2, 3])):
            at += 1
            calls = []
            for _ in range(rng.choice([1, 1, 2, 3])):  # parallel group
                serial += 1
                calls.append((rng.choice(["get", "put"]), f"call{serial}"))
            history.append(resp(*(call(n, i, {"n": at}) for n, i in calls), at=at, model_name="m"))
            at += 1
            answers = []
            for n, i in calls:
                if rng.random() < 0.2:
                    answers.append(retry("fix the args", name=n, id=i, at=at))
                else:
                    answers.append(ret(n, i, f"result {i}", at=at))
            rng.shuffle(answers)
            if rng.random() < 0.2:  # a user nudge sent along with the results
                answers.append(user("also, hurry", at))
            history.append(req(*answers))
        at += 1
        history.append(resp(text(f"answer {turn}"), at=at, model_name="m"))
    return history
