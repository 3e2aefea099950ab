"""What a scan or repair run found, gathered record by record in bounded memory.

Summaries of consecutive runs of records merge (:meth:`Summary.merge`) into exactly the summary of
all of them, so a scan split into partitions (on Dask, say) reports what one pass would.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ._record import Record

__all__ = ["Summary"]

#: How many keys the summary keeps per list (worst, not loaded); --jsonl has every one.
KEPT_KEYS = 10


def _heaviest(entries: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The KEPT_KEYS heaviest (weight, key) entries, ties to the earlier, kept in read order.

    Selecting by (weight, read position) is a total order, so keeping the best of each part and
    then the best of those gives what one pass over everything gives.
    """
    if len(entries) <= KEPT_KEYS:
        return entries
    # sorted() is stable: among equal weights the earlier entry comes first
    chosen = sorted(range(len(entries)), key=lambda i: -entries[i][0])[:KEPT_KEYS]
    return [entries[i] for i in sorted(chosen)]


@dataclass
class Summary:
    """Counts by action, kind, problem, rejected rule and change; the worst keys; the unloadable."""

    total: int = 0
    by_action: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)
    by_problem: Counter[str] = field(default_factory=Counter)
    by_rejected: Counter[str] = field(default_factory=Counter)
    by_change: Counter[str] = field(default_factory=Counter)
    removed: int = 0
    #: (problem count, key) of the KEPT_KEYS histories with the most problems, in read order
    _worst: list[tuple[int, str]] = field(default_factory=list)
    #: (key, error) of the first KEPT_KEYS histories that do not load, in read order
    not_loaded: list[tuple[str, str]] = field(default_factory=list)

    def add(self, record: Record) -> None:
        self.total += 1
        self.by_action[record.action] += 1
        if record.kind is not None:
            self.by_kind[record.kind] += 1
        self.by_problem.update(record.problems)
        self.by_rejected.update(record.rejected)
        self.by_change.update(record.changes)
        self.removed += len(record.removed)
        if record.error is not None and len(self.not_loaded) < KEPT_KEYS:
            self.not_loaded.append((record.key, record.error))
        weight = len(record.problems) + len(record.rejected)
        if weight:
            self._worst.append((weight, record.key))
            self._worst = _heaviest(self._worst)

    def merge(self, later: Summary) -> Summary:
        """This summary followed by ``later``'s records, as one summary (neither is changed)."""
        merged = Summary(
            total=self.total + later.total,
            by_action=self.by_action + later.by_action,
            by_kind=self.by_kind + later.by_kind,
            by_problem=self.by_problem + later.by_problem,
            by_rejected=self.by_rejected + later.by_rejected,
            by_change=self.by_change + later.by_change,
            removed=self.removed + later.removed,
            not_loaded=(self.not_loaded + later.not_loaded)[:KEPT_KEYS],
        )
        merged._worst = _heaviest(self._worst + later._worst)
        return merged

    @property
    def worst(self) -> list[tuple[str, int]]:
        """The keys with the most problems, most first (then by key)."""
        return [(key, weight) for weight, key in sorted(self._worst, key=lambda e: (-e[0], e[1]))]

    @property
    def would_change(self) -> int:
        return self.by_action["repair"]
