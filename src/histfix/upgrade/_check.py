"""The upgrade check: every stored history on the installed release (A) and on other releases (B).

:class:`UpgradeCheck` starts the probes once: ``jobs`` of the installed release, run by this
interpreter, and ``jobs`` per release checked against, each in the cached environment ``histfix
compare`` builds for it. :meth:`UpgradeCheck.run` reads a store once; each batch goes, as the
stored bytes, to one of A's probes (which observes it and repairs it), then to one probe of
every B at once (which observes it, loads what A's repairs wrote and compares its own with it,
and names what the round trip loses where it can prove it), then, for the round trips it could
not prove, back to the A probe; the records come out in store order, release by release. A batch
travels in pieces of PIECE histories, so that A's and B's probes work side by side on neighbouring
pieces; up to ``2 * jobs`` batches are on their way at a time (more when they are smaller than
the pieces the probes can take at once), so memory stays flat whatever the store's size. A release that
cannot be installed, imported or that stops answering is reported in one line and the others
go on.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._compare.environments import (
    CompareError,
    Settings,
    default_cache,
    environment,
    find_uv,
    histfix_on_a_path,
    parse_releases,
    python_in,
)
from .._oneline import first_line
from ..store._record import _unwrap
from ..store._source import Source, Stored
from ._pairs import PairRecord, ReleaseSummary, UpgradeResult, pair
from ._probes import PROBE_TIMEOUT, Probe, probe_command
from ._side import expand
from ._trip import LOSSLESS

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["CheckError", "UpgradeCheck", "check_upgrade"]

Json = dict[str, Any]
#: Histories per batch when the caller does not say.
BATCH_SIZE = 200
#: Histories per request to a probe: a batch read from the store goes in pieces this size, so
#: that B's probe starts soon after A's, the two work on neighbouring pieces, and neither waits
#: long for the other at the store's end.
PIECE = 50
#: Pieces on their way per probe slot: one on A, one on B, and one waiting so A never idles.
PIECES_AT_ONCE = 3


class CheckError(RuntimeError):
    """The check itself cannot go on: the installed release's own probe failed (one line)."""


@dataclass
class Prepared:
    """One stored value, ready to send: the history's JSON list as bytes, or why it is none."""

    key: str
    history: bytes | None
    #: for a value that is no history: the reason, as both sides report it
    not_a_history: Json | None = None


def prepare(stored: Stored) -> Prepared:
    """The history inside a stored value (an envelope unwrapped), or why there is none."""
    error = stored.error
    if error is None:
        try:
            text, _, _ = _unwrap(stored.raw)
        except UnicodeDecodeError as exc:
            error = f"not UTF-8 text ({exc.reason})"
        except ValueError as exc:
            error = first_line(exc)
        else:
            return Prepared(stored.key, text.encode())
    return Prepared(stored.key, None, {"loads": error, "load_json": error, "changes": None})


@dataclass
class CheckedBatch:
    """What every side said of one batch: A's observations, and per release B's and the trips."""

    prepared: list[Prepared]
    a: list[Json] = field(default_factory=list)
    b: dict[str, list[Json]] = field(default_factory=dict)
    trips: dict[str, list[Json | None]] = field(default_factory=dict)
    #: release -> why it could not answer this batch
    failed: dict[str, str] = field(default_factory=dict)


class Side(Protocol):
    """A release's side as the check uses it: a probe, or the installed release in this process."""

    def send(self, header: Json, blobs: list[bytes | None]) -> Future[tuple[Json, list[bytes | None]]]: ...

    def answer(
        self, sent: Future[tuple[Json, list[bytes | None]]], what: str
    ) -> tuple[Json, list[bytes | None]]: ...


def check_batch(
    prepared: list[Prepared],
    a: Side,
    b_sides: Mapping[str, Side],
    *,
    where: str,
    release_a: str,
    translations: bool,
) -> CheckedBatch:
    """One batch through A's side, every B's at once, and A's again for the round trips the B
    sides could not prove lossless (``translations``: some B's loader translates parts, so A
    says which it translated). A B side that fails is named in ``failed``; A's failing is a
    :class:`CheckError`."""
    done = CheckedBatch(prepared)
    items = [one.history for one in prepared if one.history is not None]
    if not items:
        return done

    def from_a(header: Json, blobs: list[bytes | None]) -> tuple[Json, list[bytes | None]]:
        try:
            return a.answer(a.send(header, blobs), where)
        except CompareError as exc:
            raise CheckError(f"the probe of the installed pydantic-ai-slim {release_a}: {exc}") from None

    header, blobs = from_a(
        {"op": "observe", "want_repaired": True, "translations": translations}, list(items)
    )
    done.a = [expand(values) for values in header["found"]]
    # B gets A's repair outputs (to load and compare) and the parts A's loader translated (for its proofs)
    asked = [x for at, history in enumerate(items) for x in (history, *blobs[3 * at : 3 * at + 3])]
    sent = {release: side.send({"op": "observe"}, asked) for release, side in b_sides.items()}
    for release, side in b_sides.items():
        try:
            header, dumps = side.answer(sent[release], where)
        except CompareError as exc:
            done.failed[release] = str(exc)
            continue
        done.b[release] = [expand(values) for values in header["found"]]
        trips: list[Json | None] = []
        unproven: list[int] = []
        for at, (trip, on_a) in enumerate(zip(header["trip"], done.a, strict=True)):
            if trip is None or on_a["loads"] is not None:  # a loader refused it: no round trip
                trips.append(None)
            elif trip == 0:  # B could not name what it loses: run it for real, here on A
                trips.append(None)
                unproven.append(at)
            else:
                trips.append(LOSSLESS if trip == 1 else trip)
        done.trips[release] = trips
        if unproven:
            answer, _ = from_a({"op": "trip"}, [x for at in unproven for x in (items[at], dumps[at])])
            for at, trip in zip(unproven, answer["trips"], strict=True):
                trips[at] = trip
    return done


#: What a release's records say when its probes were stopped before this batch.
STOPPED = "the probe was stopped after an earlier failure"


def joined(pieces: Sequence[CheckedBatch]) -> CheckedBatch:
    """The pieces of one batch as if the batch had gone whole: a release that failed any piece
    with histories failed the batch (the first piece's reason), as one request would have."""
    if len(pieces) == 1:
        return pieces[0]
    done = CheckedBatch([one for piece in pieces for one in piece.prepared])
    done.a = [found for piece in pieces for found in piece.a]
    asked = [piece for piece in pieces if any(one.history is not None for one in piece.prepared)]
    for release in dict.fromkeys(release for piece in asked for release in (*piece.b, *piece.failed)):
        missing = next((piece for piece in asked if release not in piece.b), None)
        if missing is not None:
            done.failed[release] = missing.failed.get(release, STOPPED)
            continue
        done.b[release] = [found for piece in asked for found in piece.b[release]]
        done.trips[release] = [trip for piece in asked for trip in piece.trips[release]]
    return done


#: Why a release answered no more, said once after the first reason.
NOT_ON = "; from there on, not checked"


@dataclass
class BatchRecords:
    """One batch's pair records per release that answered it, and why the others did not."""

    count: int
    records: dict[str, list[PairRecord]]
    #: release -> why it could not check this batch (the whole line the summary shows)
    failed: dict[str, str]


def records_of(done: CheckedBatch, releases: Sequence[str], release_a: str) -> BatchRecords:
    """Pair every history of a checked batch with each release's answer, in key order."""
    result = BatchRecords(len(done.prepared), {}, {})
    histories = any(one.history is not None for one in done.prepared)
    for release in releases:
        if histories and release not in done.b:
            why = done.failed.get(release, STOPPED)
            result.failed[release] = f"{why}{NOT_ON}"
            continue
        a_answers, b_answers = iter(done.a), iter(done.b.get(release, []))
        trips = iter(done.trips.get(release, []))
        records = result.records[release] = []
        for one in done.prepared:
            if one.history is None:
                assert one.not_a_history is not None
                a, b, trip = one.not_a_history, dict(one.not_a_history), None
            else:
                a, b, trip = next(a_answers), next(b_answers), next(trips)
            records.append(pair(one.key, release_a, release, a=a, b=b, trip=trip))
    return result


class Gathered:
    """The summaries of a check, batch by batch in store order, and the callbacks it feeds; a
    release that fails a batch is given up (``give_up``) and reported no further."""

    def __init__(
        self,
        release_a: str,
        releases: Sequence[str],
        *,
        failed: dict[str, str],
        give_up: Callable[[str, str], None],
        on_record: Callable[[PairRecord], None] | None = None,
        on_batch: Callable[[str, int], None] | None = None,
    ) -> None:
        self.summaries = {
            release: ReleaseSummary(release, failed=failed.get(release)) for release in releases
        }
        self.release_a = release_a
        self._failed = failed
        self._give_up = give_up
        self._on_record = on_record
        self._on_batch = on_batch

    def add(self, batch: BatchRecords) -> None:
        for release, summary in self.summaries.items():
            if release not in self._failed and release in batch.failed:
                self._give_up(release, batch.failed[release])
            if release in self._failed:
                summary.failed = self._failed[release]
                continue
            for record in batch.records[release]:
                summary.add(record)
                if self._on_record is not None:
                    self._on_record(record)
            if self._on_batch is not None:
                self._on_batch(release, batch.count)

    def result(self) -> UpgradeResult:
        return UpgradeResult(self.release_a, self.summaries)


class UpgradeCheck:
    """The probes of an upgrade check, started once and kept up for as many stores as you run:
    ``with UpgradeCheck(["1.107.10", "2.9.1"]) as check: result = check.run(source)``.

    Each release runs in the environment ``histfix compare`` builds and caches for it (``cache``,
    default ``$HISTFIX_COMPARE_CACHE`` or the user cache; ``find_links``: install offline from
    that folder of wheels; ``uv``: default ``$HISTFIX_UV``, the ``histfix[compare]`` extra, PATH).
    ``jobs`` probes run per release (and as many of the installed one). ``on_release(release,
    None)`` when a release's probes are up, ``(release, reason)`` when it cannot be checked (not
    installable, not importable, no answer within ``timeout`` seconds a batch): the others go
    on. Bad ``against`` or ``jobs``, or no uv: ValueError; the installed release's own probe
    failing: :class:`CheckError`.
    """

    def __init__(
        self,
        against: Sequence[str],
        *,
        cache: Path | None = None,
        find_links: Path | None = None,
        uv: str | None = None,
        provider: str | None = None,
        timeout: float = PROBE_TIMEOUT,
        jobs: int = 1,
        on_release: Callable[[str, str | None], None] | None = None,
    ) -> None:
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs must be a whole number of at least 1, not {jobs!r}")
        try:
            self.releases = parse_releases(",".join(against))
            self._settings = Settings(
                uv=uv or find_uv(), cache=cache or default_cache(), find_links=find_links
            )
        except CompareError as exc:
            raise ValueError(str(exc).replace("--releases", "against")) from None
        from .._release.installed import current

        # backend_info's version, read without importing pydantic-ai here: the probes need it, not this process
        self.release_a = current()[1]
        self.provider = provider
        self.timeout = timeout
        self.jobs = jobs
        self.on_release = on_release
        #: release -> why it cannot be checked (any more)
        self.failed: dict[str, str] = {}
        self._a: list[Probe] = []
        self._b: dict[str, list[Probe]] = {}
        #: whether a release checked against translates parts on load (its proofs then need A's)
        self._translations = False
        self._lock = threading.Lock()
        self._scratch: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Self:
        self._scratch = tempfile.TemporaryDirectory(prefix="histfix-upgrade-")
        path_entry = histfix_on_a_path(Path(self._scratch.name))
        try:
            self._start(path_entry)
        except BaseException:
            self.close()
            raise
        return self

    def _start(self, path_entry: Path) -> None:
        argv, variables = probe_command(sys.executable, path_entry, inherit_path=True)
        try:
            self._a = [Probe(argv, variables, self.release_a, self.timeout) for _ in range(self.jobs)]
        except CompareError as exc:
            raise self._a_failed(exc) from None
        # every release's probes start importing at once (a second each), the installed one's too
        starting: dict[str, list[Probe]] = {}
        cannot: dict[str, str] = {}
        try:
            for release in self.releases:  # built one after the other, started side by side
                try:
                    env, _ = environment(release, self._settings)
                    argv, variables = probe_command(python_in(env), path_entry, inherit_path=False)
                    starting[release] = []
                    for _ in range(self.jobs):
                        starting[release].append(Probe(argv, variables, release, self.timeout))
                except CompareError as exc:
                    self._stop_all(starting.pop(release, []))
                    cannot[release] = str(exc)
            try:
                hello = [probe.hello() for probe in self._a].pop()
                for probe in self._a:
                    probe.request({"op": "setup", "provider": self.provider}, [], "to set up")
            except CompareError as exc:
                raise self._a_failed(exc) from None
        except BaseException:
            for probes in starting.values():
                self._stop_all(probes)
            raise
        for release, reason in cannot.items():
            self.give_up(release, reason)
        for release in self.releases:
            if release not in starting:
                continue
            try:
                for probe in starting[release]:
                    probe.hello()
                    setup = {
                        "op": "setup",
                        "provider": self.provider,
                        "fields": hello["fields"],
                        "upstream": hello["upstream"],
                    }
                    probe.request(setup, [], "to set up")
            except CompareError as exc:
                self._stop_all(starting[release])
                self.give_up(release, str(exc))
                continue
            self._b[release] = starting[release]
            self._translations = self._translations or bool(starting[release][0].hello().get("translates"))
            if self.on_release is not None:
                self.on_release(release, None)

    def _a_failed(self, exc: CompareError) -> CheckError:
        """Why the check cannot go on: the installed release's own probe failed."""
        return CheckError(f"the probe of the installed pydantic-ai-slim {self.release_a}: {exc}")

    @staticmethod
    def _stop_all(probes: list[Probe]) -> None:
        for probe in probes:
            probe.stop()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every probe and remove the scratch folder."""
        self._stop_all(self._a)
        self._a = []
        for probes in self._b.values():
            self._stop_all(probes)
        self._b.clear()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def give_up(self, release: str, reason: str) -> None:
        """Stop checking ``release`` (its probes stop) and say why, once."""
        with self._lock:
            probes = self._b.pop(release, [])
            known = release in self.failed
            self.failed.setdefault(release, reason)
        self._stop_all(probes)
        if not known and self.on_release is not None:
            self.on_release(release, reason)

    def run(
        self,
        source: Source,
        *,
        batch_size: int = BATCH_SIZE,
        on_record: Callable[[PairRecord], None] | None = None,
        on_batch: Callable[[str, int], None] | None = None,
    ) -> UpgradeResult:
        """Check every history in ``source``. ``on_record`` gets each pair record, batch by
        batch, release by release and history by history in key order; ``on_batch(release, n)``
        after each batch a release answered. Raises only what ``source`` raises, and
        :class:`CheckError`."""
        gathered = Gathered(
            self.release_a,
            self.releases,
            failed=self.failed,
            give_up=self.give_up,
            on_record=on_record,
            on_batch=on_batch,
        )
        in_flight: deque[list[Future[CheckedBatch]]] = deque()
        pieces = 0
        workers = PIECES_AT_ONCE * self.jobs
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="histfix-batch") as pool:
            try:
                after: str | None = None
                for batch in source.read(batch_size=batch_size):
                    where = "on the first batch" if after is None else f"on the batch after {after!r}"
                    prepared = [prepare(stored) for stored in batch]
                    sent = []
                    for at in range(0, len(prepared), PIECE):
                        sent.append(
                            pool.submit(self._work, pieces % self.jobs, prepared[at : at + PIECE], where)
                        )
                        pieces += 1
                    in_flight.append(sent)
                    after = batch[-1].key
                    # enough read ahead: every worker has a piece, and the next batch is ready
                    while len(in_flight) >= 2 * self.jobs and sum(map(len, in_flight)) >= workers:
                        gathered.add(self._records(in_flight.popleft()))
                while in_flight:
                    gathered.add(self._records(in_flight.popleft()))
            except BaseException:
                for sent in in_flight:
                    for future in sent:
                        future.cancel()
                raise
        return gathered.result()

    def _records(self, sent: list[Future[CheckedBatch]]) -> BatchRecords:
        return records_of(joined([future.result() for future in sent]), self.releases, self.release_a)

    def _work(self, slot: int, prepared: list[Prepared], where: str) -> CheckedBatch:
        with self._lock:
            b_sides = {release: probes[slot] for release, probes in self._b.items()}
        return check_batch(
            prepared,
            self._a[slot],
            b_sides,
            where=where,
            release_a=self.release_a,
            translations=self._translations,
        )


def check_upgrade(
    source: Source,
    against: Sequence[str],
    *,
    cache: Path | None = None,
    find_links: Path | None = None,
    uv: str | None = None,
    provider: str | None = None,
    batch_size: int = BATCH_SIZE,
    timeout: float = PROBE_TIMEOUT,
    jobs: int = 1,
    on_record: Callable[[PairRecord], None] | None = None,
    on_release: Callable[[str, str | None], None] | None = None,
    on_batch: Callable[[str, int], None] | None = None,
) -> UpgradeResult:
    """Check every history in ``source`` on the installed release against each of ``against``:
    :class:`UpgradeCheck`'s options and :meth:`UpgradeCheck.run`'s, for one store."""
    with UpgradeCheck(
        against,
        cache=cache,
        find_links=find_links,
        uv=uv,
        provider=provider,
        timeout=timeout,
        jobs=jobs,
        on_release=on_release,
    ) as check:
        return check.run(source, batch_size=batch_size, on_record=on_record, on_batch=on_batch)
