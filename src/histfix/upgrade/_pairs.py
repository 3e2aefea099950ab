"""What breaks for a history between the installed release (A) and another (B), and the counts.

:func:`pair` turns A's and B's observations of one history (:mod:`._observe`) and its round trip
(:mod:`._trip`) into a :class:`PairRecord`; a :class:`ReleaseSummary` counts them per release.
Pure data: it runs where the records are gathered, and imports no pydantic-ai.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from ._meaning import general

__all__ = ["Break", "PairRecord", "ReleaseSummary", "UpgradeResult", "pair"]

Json = dict[str, Any]
#: What can break for a history between A and B (the keys of PairRecord.breaks): only what
#: changes behaviour does (a bookkeeping difference no model sees is reported, never a break).
Break = Literal["loads", "load_json", "repair_output", "repair", "upstream_repair", "sends", "round_trip"]
#: Histories that would break named per release in the summary.
WORST_SHOWN = 10


@dataclass(frozen=True, slots=True)
class PairRecord:
    """One stored history on A (installed) and B (``release``): both observations and what breaks."""

    key: str
    release_a: str
    release: str
    a: Json
    b: Json
    #: None when no round trip ran (a loader failed); else the error loading B's dump on A, or
    #: what it lost: ``lost`` values that change behaviour and ``bookkeeping`` ones, with paths
    round_trip: Json | None
    #: what would break moving from A to B, each with its one-line reason (empty: nothing)
    breaks: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> Json:
        """The record as one JSON object (``histfix scan --against R --jsonl``)."""
        return {
            "key": self.key,
            "a": self.release_a,
            "b": self.release,
            "breaks": self.breaks,
            "on_a": self.a,
            "on_b": self.b,
            "round_trip": self.round_trip,
        }


@dataclass
class ReleaseSummary:
    """Counts for one release pair, for the summary."""

    release: str
    histories: int = 0
    loads_on_both: int = 0
    loads_on_a_only: int = 0
    loads_on_b_only: int = 0
    loads_on_neither: int = 0
    load_json_on_a_only: int = 0
    b_repair_changes: int = 0
    by_b_change: Counter[str] = field(default_factory=Counter)
    breaks: Counter[str] = field(default_factory=Counter)
    breaking: int = 0
    #: up to WORST_SHOWN (key, reason) of histories that would break
    worst: list[tuple[str, str]] = field(default_factory=list)
    #: what the round trip loses (general paths): values that change behaviour, and bookkeeping
    lost_fields: Counter[str] = field(default_factory=Counter)
    lost_bookkeeping: Counter[str] = field(default_factory=Counter)
    #: where B's histfix.repair (repair_messages) writes otherwise than A's, changing behaviour
    repair_fields: Counter[str] = field(default_factory=Counter)
    upstream_fields: Counter[str] = field(default_factory=Counter)
    #: histories whose histfix.repair (repair_messages) differs in bookkeeping only
    repair_bookkeeping: int = 0
    upstream_bookkeeping: int = 0
    #: why this release could not be checked (whole or from some batch on); None when it was
    failed: str | None = None

    def add(self, record: PairRecord) -> None:
        self.histories += 1
        a, b = record.a["loads"] is None, record.b["loads"] is None
        if a and b:
            self.loads_on_both += 1
        elif a:
            self.loads_on_a_only += 1
        elif b:
            self.loads_on_b_only += 1
        else:
            self.loads_on_neither += 1
        if record.a["load_json"] is None and record.b["load_json"] is not None:
            self.load_json_on_a_only += 1
        if record.b.get("changes"):
            self.b_repair_changes += 1
            self.by_b_change.update(record.b["changes"])
        if record.round_trip:
            self.lost_fields.update(general(path) for path in record.round_trip["lost_paths"])
            self.lost_bookkeeping.update(general(path) for path in record.round_trip["bookkeeping_paths"])
        repair, upstream = record.b.get("repair_differs"), record.b.get("upstream_repair_differs")
        if repair:
            self.repair_fields.update(general(path) for path in repair["changed_paths"])
            self.repair_bookkeeping += not repair["changed"]
        if upstream:
            self.upstream_fields.update(general(path) for path in upstream["changed_paths"])
            self.upstream_bookkeeping += not upstream["changed"]
        if record.breaks:
            self.breaking += 1
            self.breaks.update(record.breaks.keys())
            if len(self.worst) < WORST_SHOWN:
                kind, reason = next(iter(record.breaks.items()))
                self.worst.append((record.key, f"{kind}: {reason}"))

    def merge(self, other: ReleaseSummary) -> ReleaseSummary:
        """This summary followed by ``other`` (the histories after it), as one: how partial
        summaries of a store's parts add up in order (the worst keys stay the first ones)."""
        merged = ReleaseSummary(self.release, failed=self.failed or other.failed)
        for name in ("histories", "loads_on_both", "loads_on_a_only", "loads_on_b_only", "loads_on_neither"):
            setattr(merged, name, getattr(self, name) + getattr(other, name))
        merged.load_json_on_a_only = self.load_json_on_a_only + other.load_json_on_a_only
        merged.b_repair_changes = self.b_repair_changes + other.b_repair_changes
        merged.by_b_change = self.by_b_change + other.by_b_change
        merged.breaks = self.breaks + other.breaks
        merged.breaking = self.breaking + other.breaking
        merged.worst = (self.worst + other.worst)[:WORST_SHOWN]
        for name in ("lost_fields", "lost_bookkeeping", "repair_fields", "upstream_fields"):
            setattr(merged, name, getattr(self, name) + getattr(other, name))
        merged.repair_bookkeeping = self.repair_bookkeeping + other.repair_bookkeeping
        merged.upstream_bookkeeping = self.upstream_bookkeeping + other.upstream_bookkeeping
        return merged


@dataclass
class UpgradeResult:
    """What a check found: the installed release and one summary per release checked against."""

    release_a: str
    releases: dict[str, ReleaseSummary]

    @property
    def breaking(self) -> int:
        return sum(summary.breaking for summary in self.releases.values())

    @property
    def failed(self) -> dict[str, str]:
        return {r: s.failed for r, s in self.releases.items() if s.failed is not None}


def _accepted(side: Json) -> bool:
    """Whether what a plain Agent sends on that release is accepted (strict provider and --provider)."""
    if side.get("returns") is None or not str(side.get("sends")).startswith("sends "):
        return False
    return not side["sent_problems"] and not side.get("provider_rejects")


def pair(key: str, release_a: str, release: str, *, a: Json, b: Json, trip: Json | None) -> PairRecord:
    """Pair A's and B's observations of one history and its round trip: what breaks moving to B."""
    breaks: dict[str, str] = {}
    if a["loads"] is None and b["loads"] is not None:
        breaks["loads"] = f"pydantic-ai {release} cannot load it: {b['loads']}"
    if a["load_json"] is None and b["load_json"] is not None:
        breaks["load_json"] = f"histfix.load_json on {release}: {b['load_json']}"
    if b.get("loads_other_repair") is not None:
        breaks["repair_output"] = (
            f"what {release_a}'s repair writes fails pydantic-ai {release}'s loader: {b['loads_other_repair']}"
        )
    if _accepted(a) and not _accepted(b):
        rejects = b.get("provider_rejects")
        extra = f"; the provider rejects {', '.join(rejects)}" if rejects else ""
        breaks["sends"] = f"on {release} a plain Agent {b['sends']}{extra} (on {release_a}: {a['sends']})"
    for name, whose in (
        ("repair", "histfix.repair"),
        ("upstream_repair", "pydantic-ai's own repair_messages"),
    ):
        differs = b.get(f"{name}_differs")
        if differs and differs["changed"]:
            where = ", ".join(differs["changed_paths"])
            breaks[name] = (
                f"{whose} on {release} writes otherwise than on {release_a}, in {differs['changed']} "
                f"value(s) that change behaviour: {where}"
            )
    if trip is not None and trip["error"] is not None:
        breaks["round_trip"] = f"what {release} dumps fails {release_a}'s loader: {trip['error']}"
    elif trip is not None and trip["lost"]:
        where = ", ".join(trip["lost_paths"])
        breaks["round_trip"] = (
            f"loaded and dumped on {release}, it loses {trip['lost']} value(s) that change behaviour: {where}"
        )
    return PairRecord(key, release_a, release, a, b, trip, breaks)
