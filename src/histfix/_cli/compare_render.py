"""``histfix compare``'s output, from the probes' plain data: the table, the variants, the JSON.

Pure functions (data in, text out). Each side (what plain pydantic-ai sends, what histfix.repair
returns) gets a letter per distinct outcome across releases and a ``*`` where a release differs
from the one above; each distinct outcome is then printed once, later ones as a diff.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from .._compare.outcome import Outcome
from .._compare.probe import PLAIN, REPAIRED

__all__ = ["Style", "as_json", "render"]

Json = dict[str, Any]
TITLES = {PLAIN: "plain pydantic-ai sends", REPAIRED: "histfix.repair returns"}


def label(outcomes: list[Outcome]) -> list[str]:
    """A letter per distinct outcome, in order of first appearance: A, B, C…"""
    seen: dict[Outcome, str] = {}
    return [seen.setdefault(o, chr(ord("A") + len(seen))) for o in outcomes]


def changed(letters: list[str]) -> list[bool]:
    """Which rows differ from the row above (never the first)."""
    return [i > 0 and letters[i] != letters[i - 1] for i in range(len(letters))]


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


def render_table(observations: list[Json], style: Style) -> list[str]:
    """One row per release: its auto path, then a lettered summary per side; changes starred."""
    columns = {side: Column.of(observations, side) for side in (PLAIN, REPAIRED)}
    header = ["release", "auto path", TITLES[PLAIN], TITLES[REPAIRED]]
    rows: list[list[tuple[str, str]]] = []  # (plain text for the width, text as shown)
    for i, observation in enumerate(observations):
        row = [(observation["release"],) * 2, (observation["backend"],) * 2]
        for side, column in columns.items():
            text = (
                f"{column.letters[i]}{'*' if column.changes[i] else ' '} {column.outcomes[i].summary(side)}"
            )
            row.append((text, style.changed(text) if column.changes[i] else text))
        rows.append(row)
    widths = [max(len(h), *(len(r[c][0]) for r in rows)) for c, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        cells = (shown + " " * (w - len(text)) for (text, shown), w in zip(row, widths, strict=True))
        lines.append("  ".join(cells).rstrip())
    return lines


def diff_lines(before: list[str], after: list[str], style: Style) -> list[str]:
    """The lines that differ (`-` before only, `+` after only) with one line of context; `…`
    separates distant changes."""
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
    """Each distinct outcome of one side once: the first in full, later ones as a diff."""
    column = Column.of(observations, side)
    lines: list[str] = []
    previous: Outcome | None = None
    for letter in dict.fromkeys(column.letters):
        outcome = column.outcomes[column.letters.index(letter)]
        releases = [o["release"] for o, x in zip(observations, column.letters, strict=True) if x == letter]
        lines.append(f"{TITLES[side]}, {letter} ({', '.join(releases)}): {outcome.summary(side)}")
        if outcome.raised:
            lines.append(f"    raises {outcome.raised}")
        lines += [f"    {problem}" for problem in outcome.problems]
        if outcome.lines is not None:
            if previous is not None and previous.lines is not None:
                shown = diff_lines(list(previous.lines), list(outcome.lines), style)
            else:
                shown = list(outcome.lines)
            lines += [f"  {line}" for line in shown]
        lines.append("")
        previous = outcome
    return lines


def _continued_note(prompt: str | None) -> str:
    return (
        f"A finished conversation sends nothing without a new prompt: it is continued with {prompt!r} "
        "(choose another with --prompt)."
    )


def render(
    history: str, prompt: str | None, observations: list[Json], style: Style, *, continued: bool = False
) -> str:
    """The whole comparison for a person: a header, the table, then each side's variants.
    ``continued``: ``prompt`` is the neutral one a finished conversation was given, not the user's."""
    run = f"run_sync({prompt!r}, message_history=history)"
    lines = [
        f"{history}: what each release does with it ({run}, a capturing FunctionModel, no provider)",
        *([_continued_note(prompt)] if continued else []),
        "A strict provider rejects a call not answered in the next message and a result without a call.",
        "Letters name distinct outcomes; * marks a release that differs from the one above.",
        "",
        *render_table(observations, style),
        "",
        *render_variants(observations, PLAIN, style),
        *render_variants(observations, REPAIRED, style),
    ]
    return "\n".join(lines).rstrip() + "\n"


def as_json(history: str, prompt: str | None, observations: list[Json], *, continued: bool = False) -> Json:
    """The comparison as data: per release and side, the letter, whether it changed, the outcome.
    ``prompt_defaulted``: the prompt is the neutral one a finished conversation was continued with."""
    result: Json = {"history": history, "prompt": prompt, "prompt_defaulted": continued, "releases": []}
    columns = {side: Column.of(observations, side) for side in (PLAIN, REPAIRED)}
    for i, observation in enumerate(observations):
        entry: Json = {"release": observation["release"], "backend": observation["backend"]}
        for side, column in columns.items():
            outcome = column.outcomes[i]
            entry[side] = {
                "variant": column.letters[i],
                "changed": column.changes[i],
                "summary": outcome.summary(side),
                "raised": outcome.raised,
                "problems": list(outcome.problems),
                "lines": None if outcome.lines is None else list(outcome.lines),
                "messages": observation[side]["messages"],
            }
        result["releases"].append(entry)
    return result
