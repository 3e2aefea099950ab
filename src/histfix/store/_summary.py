"""What a scan or repair run found, gathered record by record in bounded memory."""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field

from ._record import Record

__all__ = ["Summary"]

#: How many keys the summary keeps per list (worst, not loaded); --jsonl has every one.
KEPT_KEYS = 10


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
    #: (problem count, key) min-heap of the KEPT_KEYS histories with the most problems
    _worst: list[tuple[int, str]] = field(default_factory=list)
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
            # only a strictly heavier history displaces one: on ties the earlier key stays
            entry = (weight, record.key)
            if len(self._worst) < KEPT_KEYS:
                heapq.heappush(self._worst, entry)
            elif entry[0] > self._worst[0][0]:
                heapq.heapreplace(self._worst, entry)

    @property
    def worst(self) -> list[tuple[str, int]]:
        """The keys with the most problems, most first (then by key)."""
        return [(key, weight) for weight, key in sorted(self._worst, key=lambda e: (-e[0], e[1]))]

    @property
    def would_change(self) -> int:
        return self.by_action["repair"]
