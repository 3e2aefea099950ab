"""What each pinned pydantic-ai release does with one stored history, side by side (`nox -s compare`).

`nox -s compare -- HISTORY [--prompt TEXT] [--json]` runs this twice over:

* ``--probe-into OUT``, once per pinned release, inside an environment holding that release:
  loads HISTORY (pydantic-ai JSON) with the release's own ``ModelMessagesTypeAdapter`` and runs a
  plain ``Agent`` on it whose model is a capturing ``FunctionModel`` (no provider, no network),
  recording what pydantic-ai would send (or what it raises); and loads it with
  ``histfix.load_json``, recording what ``histfix.repair`` returns. Both results are checked with
  the suite's strict pairing checker (tests/strict.py), the same "provider" compat-matrix.md uses.
* ``--render PROBE...``: one table across releases (a letter per distinct outcome, ``*`` where a
  release differs from the one above), then each distinct outcome in full, later ones as a diff
  against the one before. ``--json`` prints the same as JSON.

Everything but :func:`probe` is pure (plain data in, text out) and tested in the normal suite.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Json = dict[str, Any]
MARKER = "pydantic_ai_synthesized_tool_return"  # as dsl.MARKER; not imported, dsl imports pydantic-ai
WIDTH = 48
PLAIN, HISTFIX = "plain", "histfix"
TITLES = {PLAIN: "plain pydantic-ai sends", HISTFIX: "histfix.repair returns"}


# --- the probe (runs inside one release's environment) -------------------------------------------------


def probe(raw: bytes, prompt: str | None) -> Json:
    """What the installed release does with the stored history ``raw``, as plain JSON data.

    The plain side loads ``raw`` the way pydantic-ai does (its own ``ModelMessagesTypeAdapter``);
    the histfix side the way histfix does (``histfix.load_json``, which also converts values this
    release cannot represent), then repairs it.
    """
    from pydantic_ai import messages as pai

    import histfix

    info = histfix.backend_info()
    return {
        "release": info.version,
        "backend": info.backend,
        PLAIN: _side(
            lambda: pai.ModelMessagesTypeAdapter.validate_json(raw), lambda h: _captured_run(h, prompt)
        ),
        HISTFIX: _side(lambda: histfix.load_json(raw), _repaired),
    }


def _side(
    load: Callable[[], list[Any]], run: Callable[[list[Any]], tuple[list[Any] | None, str | None]]
) -> Json:
    """Load, run, and check what came out with the suite's strict pairing checker."""
    from pydantic_ai import messages as pai

    from strict import pairing_problems

    try:
        history = load()
    except ValueError as exc:  # pydantic's ValidationError is a ValueError too
        return {
            "raised": f"cannot load the history: {_first_line(str(exc))}",
            "messages": None,
            "problems": [],
        }
    messages, raised = run(history)
    if messages is None:
        return {"raised": raised, "messages": None, "problems": []}
    dumped = pai.ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    return {"raised": raised, "messages": dumped, "problems": pairing_problems(messages)}


def _repaired(history: list[Any]) -> tuple[list[Any] | None, str | None]:
    """What ``histfix.repair`` returns, or what it raises."""
    import histfix

    try:
        return histfix.repair(history), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"


def _captured_run(history: list[Any], prompt: str | None) -> tuple[list[Any] | None, str | None]:
    """What a plain ``Agent`` sends on its first model request (a capturing FunctionModel), and what it raises."""
    from pydantic_ai import Agent
    from pydantic_ai import messages as pai
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    sent: list[list[pai.ModelMessage]] = []

    def capture(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
        sent.append(list(messages))
        return pai.ModelResponse(parts=[pai.TextPart("(captured)")])

    try:
        Agent(FunctionModel(capture)).run_sync(prompt, message_history=history)
    except Exception as exc:
        return (sent[0] if sent else None), f"{type(exc).__name__}: {exc}"
    return sent[0], None


# --- describing messages (pure) ------------------------------------------------------------------------


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def describe_part(part: Json) -> str:
    """One line per part, release-independent: kind, tool and id, content; timestamps left out."""
    kind = part.get("part_kind", "?")
    if part.get("tool_call_id") is not None and part.get("tool_name") is not None:
        body = part["args"] if "args" in part else part.get("content")
        line = f"{kind:<14} {part['tool_name']}({part['tool_call_id']}) {_short(body)}"
        marks = [f"outcome={part['outcome']}"] if part.get("outcome", "success") != "success" else []
        if (part.get("metadata") or {}).get(MARKER):
            marks.insert(0, "synthesized")
        return line + (f"  [{', '.join(marks)}]" if marks else "")
    return f"{kind:<14} {_short(part.get('content', ''))}"


def describe(messages: list[Json]) -> list[str]:
    """A history (pydantic-ai JSON data) as numbered lines, one per part."""
    lines = []
    for index, message in enumerate(messages):
        parts = message.get("parts") or [None]
        for n, part in enumerate(parts):
            head = f"{index:>3} {message.get('kind', '?'):<9}" if n == 0 else " " * 13
            lines.append(f"{head} {'(no parts)' if part is None else describe_part(part)}")
    return lines


# --- one side (plain or histfix) of one release --------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one side did on one release, reduced to what is compared across releases."""

    raised: str | None
    #: the messages sent or returned, one line per part (None: nothing was sent)
    lines: tuple[str, ...] | None
    count: int
    problems: tuple[str, ...]

    @classmethod
    def of(cls, observation: Json, side: str) -> Outcome:
        data = observation[side]
        messages = data["messages"]
        if messages is None:
            return cls(data["raised"], None, 0, tuple(data["problems"]))
        return cls(data["raised"], tuple(describe(messages)), len(messages), tuple(data["problems"]))

    def summary(self, side: str) -> str:
        """A short cell: how many messages, and whether a strict provider accepts them."""
        if self.lines is None:
            return f"raises {_first_line(self.raised or '')}"
        verb = "sends" if side == PLAIN else "returns"
        problems = f"{len(self.problems)} problem{'s' if len(self.problems) > 1 else ''}"
        verdict = f"strict provider: 400 ({problems})" if self.problems else "valid"
        text = f"{verb} {self.count} messages · {verdict}"
        return text + (f" · then raises {_first_line(self.raised)}" if self.raised else "")


def _first_line(text: str) -> str:
    return _short(text.splitlines()[0] if text else "")


def label(outcomes: list[Outcome]) -> list[str]:
    """A letter per distinct outcome, in order of first appearance: A, B, C…"""
    seen: dict[Outcome, str] = {}
    return [seen.setdefault(o, chr(ord("A") + len(seen))) for o in outcomes]


def changed(labels: list[str]) -> list[bool]:
    """Which rows differ from the row above (never the first)."""
    return [i > 0 and labels[i] != labels[i - 1] for i in range(len(labels))]


@dataclass(frozen=True)
class Column:
    """One side across all releases: each release's outcome, its letter, and whether it changed."""

    outcomes: list[Outcome]
    letters: list[str]
    changes: list[bool]

    @classmethod
    def of(cls, observations: list[Json], side: str) -> Column:
        outcomes = [Outcome.of(o, side) for o in observations]
        letters = label(outcomes)
        return cls(outcomes, letters, changed(letters))


# --- rendering (pure) ----------------------------------------------------------------------------------


class Style:
    """ANSI highlighting, or none (pipes, NO_COLOR, tests)."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def changed(self, text: str) -> str:
        return self._wrap("1;33", text)

    def removed(self, text: str) -> str:
        return self._wrap("31", text)

    def added(self, text: str) -> str:
        return self._wrap("32", text)


def _cell(letter: str, is_changed: bool, outcome: Outcome, side: str, style: Style) -> tuple[str, str]:
    """The cell text and how to print it (padding is computed on the plain text)."""
    text = f"{letter}{'*' if is_changed else ' '} {outcome.summary(side)}"
    return text, style.changed(text) if is_changed else text


def render_table(observations: list[Json], style: Style) -> list[str]:
    """One row per release: its auto path, then a lettered summary per side; changes starred."""
    columns = {side: Column.of(observations, side) for side in (PLAIN, HISTFIX)}
    header = ["release", "auto path", TITLES[PLAIN], TITLES[HISTFIX]]
    rows: list[list[tuple[str, str]]] = []
    for i, observation in enumerate(observations):
        row = [(observation["release"],) * 2, (observation["backend"],) * 2]
        for side, c in columns.items():
            row.append(_cell(c.letters[i], c.changes[i], c.outcomes[i], side, style))
        rows.append(row)
    widths = [max(len(h), *(len(r[c][0]) for r in rows)) for c, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append(
            "  ".join(
                shown + " " * (w - len(text)) for (text, shown), w in zip(row, widths, strict=True)
            ).rstrip()
        )
    return lines


def diff_lines(before: list[str], after: list[str], style: Style) -> list[str]:
    """The lines that differ between two descriptions (`-` only before, `+` only after), with one line of
    context; `…` separates distant changes."""
    out: list[str] = []
    for line in difflib.unified_diff(before, after, n=1, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            out.extend(["…"] if out else [])
        elif line.startswith("-"):
            out.append(style.removed(line))
        elif line.startswith("+"):
            out.append(style.added(line))
        else:
            out.append(line)
    return out


def render_variants(observations: list[Json], side: str, style: Style) -> list[str]:
    """Each distinct outcome of one side once: the first in full, later ones as a diff against the previous."""
    column = Column.of(observations, side)
    letters = column.letters
    lines: list[str] = []
    previous: Outcome | None = None
    for letter in dict.fromkeys(letters):
        outcome = column.outcomes[letters.index(letter)]
        releases = [o["release"] for o, x in zip(observations, letters, strict=True) if x == letter]
        lines.append(f"{TITLES[side]}, {letter} ({', '.join(releases)}): {outcome.summary(side)}")
        if outcome.raised:
            lines.append(f"    raises {outcome.raised}")
        lines += [f"    {problem}" for problem in outcome.problems]
        if outcome.lines is not None:
            if previous is not None and previous.lines is not None:
                lines += [
                    f"  {line}" for line in diff_lines(list(previous.lines), list(outcome.lines), style)
                ]
            else:
                lines += [f"  {line}" for line in outcome.lines]
        lines.append("")
        previous = outcome
    return lines


def render(history: str, prompt: str | None, observations: list[Json], style: Style) -> str:
    run = f"run_sync({prompt!r}, message_history=history)"
    lines = [
        f"{history}: what each pinned release does with it ({run}, a capturing FunctionModel, no provider)",
        "A strict provider is the suite's pairing checker (tests/strict.py). Letters name distinct outcomes;",
        "* marks a release that differs from the one above.",
        "",
        *render_table(observations, style),
        "",
        *render_variants(observations, PLAIN, style),
        *render_variants(observations, HISTFIX, style),
    ]
    return "\n".join(lines).rstrip() + "\n"


def as_json(history: str, prompt: str | None, observations: list[Json]) -> Json:
    """The comparison as data: per release and side, the letter, whether it changed, and the full outcome."""
    result: Json = {"history": history, "prompt": prompt, "releases": []}
    columns = {side: Column.of(observations, side) for side in (PLAIN, HISTFIX)}
    for i, observation in enumerate(observations):
        entry: Json = {"release": observation["release"], "backend": observation["backend"]}
        for side, c in columns.items():
            outcome = c.outcomes[i]
            entry[side] = {
                "variant": c.letters[i],
                "changed": c.changes[i],
                "summary": outcome.summary(side),
                "raised": outcome.raised,
                "problems": list(outcome.problems),
                "lines": None if outcome.lines is None else list(outcome.lines),
                "messages": observation[side]["messages"],
            }
        result["releases"].append(entry)
    return result


# --- command line --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Compare what pydantic-ai releases do with a stored history."
    )
    parser.add_argument("history", help="pydantic-ai JSON history (ModelMessagesTypeAdapter.dump_json)")
    parser.add_argument(
        "--prompt", help="a new user prompt for the run (default: none, continue the history)"
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    step = parser.add_mutually_exclusive_group(required=True)
    step.add_argument("--probe-into", type=Path, metavar="OUT", help="record the installed release into OUT")
    step.add_argument("--render", nargs="+", type=Path, metavar="PROBE", help="render recorded probes")
    args = parser.parse_args(argv)
    if args.probe_into:
        try:
            raw = Path(args.history).read_bytes()
        except OSError as exc:
            print(f"compare: cannot read {args.history}: {exc.strerror}", file=sys.stderr)
            return 2
        args.probe_into.write_text(json.dumps(probe(raw, args.prompt)) + "\n")
        return 0
    observations = [json.loads(path.read_text()) for path in args.render]
    if args.json:
        print(json.dumps(as_json(args.history, args.prompt, observations), indent=2))
    else:
        style = Style(sys.stdout.isatty() and "NO_COLOR" not in os.environ)
        sys.stdout.write(render(args.history, args.prompt, observations, style))
    return 0


if __name__ == "__main__":
    sys.exit(main())
