"""The upgrade check: every stored history on the installed release (A) and on other releases (B).

:func:`check_upgrade` reads a store once and, per batch, observes each history on A in this
process and on each B in one long-lived probe process per release (:mod:`._upgrade_probe`, in the
cached environment ``histfix compare`` builds), then pairs the observations: what loads on A but
not on B, what A's repair writes that B cannot load, what B's plain Agent sends that a strict
provider (or ``--provider``) rejects where A's was accepted, and the JSON round trip A -> B -> A
with what it loses. A release that cannot be installed, imported or that stops answering is
reported in one line and the others go on.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from packaging.version import Version

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
from ._record import _unwrap
from ._source import Source, Stored, first_line
from ._upgrade_probe import loader_error, observe

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Break", "PairRecord", "ReleaseSummary", "UpgradeCheck", "UpgradeResult", "check_upgrade"]

Json = dict[str, Any]
#: What can break for a history between A and B (the keys of PairRecord.breaks).
Break = Literal["loads", "load_json", "repair_output", "sends", "round_trip"]
#: Seconds a probe may take over one batch before its release is given up.
PROBE_TIMEOUT = 300.0
#: Seconds a probe may take to start (import pydantic-ai and histfix) and say which release it runs.
START_TIMEOUT = 120.0
#: What every observation from a probe holds (an answer without them is no probe's answer).
OBSERVED = frozenset({"loads", "load_json", "changes", "dump", "sends", "returns", "sent_problems"})
#: Round-trip losses named per history (the rest are counted).
LOSSES_SHOWN = 5


@dataclass(frozen=True, slots=True)
class PairRecord:
    """One stored history on A (installed) and B (``release``): both observations and what breaks."""

    key: str
    release_a: str
    release: str
    a: Json
    b: Json
    #: None when no round trip ran (a loader failed); else the error loading B's dump on A, or what it lost
    round_trip: Json | None
    #: what would break moving from A to B, each with its one-line reason (empty: nothing)
    breaks: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> Json:
        """The record as one JSON object (``histfix scan --against R --jsonl``)."""
        drop = {"dump"}
        return {
            "key": self.key,
            "a": self.release_a,
            "b": self.release,
            "breaks": self.breaks,
            "on_a": {k: v for k, v in self.a.items() if k not in drop},
            "on_b": {k: v for k, v in self.b.items() if k not in drop},
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
    lost_fields: Counter[str] = field(default_factory=Counter)
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
            self.lost_fields.update(_general(path) for path in record.round_trip.get("lost_paths", []))
        if record.breaks:
            self.breaking += 1
            self.breaks.update(record.breaks.keys())
            if len(self.worst) < WORST_SHOWN:
                kind, reason = next(iter(record.breaks.items()))
                self.worst.append((record.key, f"{kind}: {reason}"))


WORST_SHOWN = 10


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


def _general(path: str) -> str:
    """``[2].parts[0].outcome`` as ``[*].parts[*].outcome``: the field, whichever message."""
    out, inside = [], False
    for char in path:
        if char == "[":
            inside = True
            out.append("[*]")
        elif char == "]":
            inside = False
        elif not inside:
            out.append(char)
    return "".join(out)


def _differences(before: Any, after: Any, path: str = "") -> Iterator[str]:
    """The paths where ``after`` lost or changed what ``before`` held (pydantic-ai JSON data)."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            if key not in after:
                yield f"{path}.{key}"
            else:
                yield from _differences(value, after[key], f"{path}.{key}")
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (one, other) in enumerate(zip(before, after, strict=True)):
            yield from _differences(one, other, f"{path}[{index}]")
    elif before != after:
        yield path or "(the whole history)"


def _round_trip(a_data: Any, b: Json) -> Json | None:
    """B's dump of the history loaded on A again: None when either loader failed, else the error
    or the paths it lost (where A's own data differs after the trip)."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    if a_data is None or b.get("dump") is None:
        return None
    try:
        back = ModelMessagesTypeAdapter.validate_json(b["dump"])
    except Exception as exc:
        return {"error": loader_error(exc), "lost": 0, "lost_paths": []}
    lost = list(_differences(a_data, ModelMessagesTypeAdapter.dump_python(back, mode="json")))
    return {"error": None, "lost": len(lost), "lost_paths": lost[:LOSSES_SHOWN]}


def _accepted(side: Json) -> bool:
    """Whether what a plain Agent sends on that release is accepted (strict provider and --provider)."""
    if side.get("returns") is None or not str(side.get("sends")).startswith("sends "):
        return False
    return not side["sent_problems"] and not side.get("provider_rejects")


def pair(key: str, release_a: str, release: str, *, a: Json, a_data: Any, b: Json) -> PairRecord:
    """Pair A's and B's observations of one history: the round trip and what breaks moving to B."""
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
    trip = _round_trip(a_data, b)
    if trip is not None and trip["error"] is not None:
        breaks["round_trip"] = f"what {release} dumps fails {release_a}'s loader: {trip['error']}"
    elif trip is not None and trip["lost"]:
        where = ", ".join(trip["lost_paths"])
        breaks["round_trip"] = f"loaded and dumped on {release}, it loses {trip['lost']} value(s): {where}"
    return PairRecord(key, release_a, release, a, b, trip, breaks)


class Probe:
    """One release's long-lived probe process: started once, fed batches, stopped at the end."""

    def __init__(self, release: str, env: Path, path_entry: Path, timeout: float) -> None:
        self.release = release
        self.timeout = timeout
        # stderr to a file, not a pipe: a chatty release must never block on a pipe nobody reads
        self._errors: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop)
        variables = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        variables |= {"PYTHONPATH": str(path_entry), "PYTHONNOUSERSITE": "1", "PYTHONIOENCODING": "utf-8"}
        argv = [str(python_in(env)), "-m", "histfix.store._upgrade_probe"]
        try:
            self._process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errors, env=variables
            )
        except OSError as exc:
            raise CompareError(f"cannot start {argv[0]} ({exc.strerror})") from None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"probe-{release}")
        hello = self._wait(self._pool.submit(self._read_line), START_TIMEOUT, "to start")
        runs = hello.get("release", "?") if isinstance(hello, dict) else "?"
        if Version(runs) != Version(release):
            self.stop()
            raise CompareError(f"its environment runs pydantic-ai-slim {runs}")

    def _read_line(self) -> Any:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._process.wait()
            raise CompareError(self._why_it_ended())
        return json.loads(line)

    def _why_it_ended(self) -> str:
        self._errors.seek(0)
        lines = [line.strip() for line in self._errors.read().decode(errors="replace").splitlines()]
        last = next((line for line in reversed(lines) if line), "no output")
        return f"the probe stopped (exit status {self._process.returncode}): {last}"

    def _wait(self, future: Future[Any], timeout: float, what: str) -> Any:
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            self.stop()
            raise CompareError(f"the probe gave no answer {what} in {timeout:.0f} s") from None
        except CompareError:
            self.stop()
            raise
        except (OSError, ValueError) as exc:  # a broken pipe, or a line that is no JSON
            self.stop()
            raise CompareError(f"the probe failed: {exc}") from None

    def submit(self, request: Json) -> Future[Any]:
        """Send one batch and read its answer, on this probe's own thread (so releases overlap)."""
        line = (json.dumps(request) + "\n").encode()

        def exchange() -> Any:
            assert self._process.stdin is not None
            try:
                self._process.stdin.write(line)
                self._process.stdin.flush()
            except BrokenPipeError:
                self._process.wait()
                raise CompareError(self._why_it_ended()) from None
            return self._read_line()

        return self._pool.submit(exchange)

    def answer(self, future: Future[Any], count: int, after: str | None) -> list[Json]:
        where = f"on the batch after {after!r}" if after is not None else "on the first batch"
        answers = self._wait(future, self.timeout, where)
        if (
            not isinstance(answers, list)
            or len(answers) != count
            or not all(isinstance(one, dict) and one.keys() >= OBSERVED for one in answers)
        ):
            self.stop()
            raise CompareError(f"the probe answered {where} with something else than {count} observations")
        return answers

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._pool.shutdown(wait=True, cancel_futures=True)
        for pipe in (self._process.stdin, self._process.stdout, self._errors):
            if pipe is not None:
                # a broken pipe's buffered bytes cannot be flushed: the process is gone anyway
                with contextlib.suppress(OSError):
                    pipe.close()


def _release_a() -> str:
    import histfix

    return histfix.backend_info().version


@dataclass
class _Prepared:
    """One stored history as A saw it, ready to send to each B."""

    key: str
    history: bytes | None  # the JSON list (an envelope unwrapped); None when it is no history at all
    a: Json
    a_data: Any = None
    repaired: bytes | None = None


def _prepare(stored: Stored, provider: str | None) -> _Prepared:
    if stored.error is not None:
        why = {"loads": stored.error, "load_json": stored.error}
        return _Prepared(stored.key, None, {**why, "changes": None})
    try:
        text, _, _ = _unwrap(stored.raw)
    except UnicodeDecodeError as exc:
        error = f"not UTF-8 text ({exc.reason})"
        return _Prepared(stored.key, None, {"loads": error, "load_json": error, "changes": None})
    except ValueError as exc:
        error = first_line(exc)
        return _Prepared(stored.key, None, {"loads": error, "load_json": error, "changes": None})
    history = text.encode()
    a, a_data, repaired = observe(history, provider=provider, keep=True)
    a.pop("dump", None)
    return _Prepared(stored.key, history, a, a_data, repaired)


def _not_a_history(prepared: _Prepared) -> Json:
    """B's side of a value that is no history before any loader runs: the same reason as on A."""
    return {k: prepared.a.get(k) for k in ("loads", "load_json", "changes")}


class UpgradeCheck:
    """The probes of an upgrade check, started once and kept up for as many stores as you run:
    ``with UpgradeCheck(["1.107.10", "2.9.1"]) as check: result = check.run(source)``.

    Each release runs in the environment ``histfix compare`` builds and caches for it (``cache``,
    default ``$HISTFIX_COMPARE_CACHE`` or the user cache; ``find_links``: install offline from
    that folder of wheels; ``uv``: default ``$HISTFIX_UV``, the ``histfix[compare]`` extra, PATH).
    ``on_release(release, None)`` when a release's probe is up, ``(release, reason)`` when it cannot
    be checked (not installable, not importable, no answer within ``timeout`` seconds a batch): the
    others go on. Bad ``against`` or no uv: ValueError.
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
        on_release: Callable[[str, str | None], None] | None = None,
    ) -> None:
        try:
            self.releases = parse_releases(",".join(against))
            self._settings = Settings(
                uv=uv or find_uv(), cache=cache or default_cache(), find_links=find_links
            )
        except CompareError as exc:
            raise ValueError(str(exc).replace("--releases", "against")) from None
        self.release_a = _release_a()
        self.provider = provider
        self.timeout = timeout
        self.on_release = on_release
        #: release -> why it cannot be checked (any more)
        self.failed: dict[str, str] = {}
        self.probes: dict[str, Probe] = {}
        self._scratch: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Self:
        self._scratch = tempfile.TemporaryDirectory(prefix="histfix-upgrade-")
        path_entry = histfix_on_a_path(Path(self._scratch.name))
        try:
            for release in self.releases:
                try:
                    env, _ = environment(release, self._settings)
                    self.probes[release] = Probe(release, env, path_entry, self.timeout)
                except CompareError as exc:
                    self.give_up(release, str(exc))
                    continue
                if self.on_release is not None:
                    self.on_release(release, None)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every probe and remove the scratch folder."""
        for probe in self.probes.values():
            probe.stop()
        self.probes.clear()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def give_up(self, release: str, reason: str) -> None:
        probe = self.probes.pop(release, None)
        if probe is not None:
            probe.stop()
        self.failed[release] = reason
        if self.on_release is not None:
            self.on_release(release, reason)

    def run(
        self,
        source: Source,
        *,
        batch_size: int = 200,
        on_record: Callable[[PairRecord], None] | None = None,
        on_batch: Callable[[str, int], None] | None = None,
    ) -> UpgradeResult:
        """Check every history in ``source``. ``on_record`` gets each pair record, history by history
        and release by release in key order; ``on_batch(release, n)`` after each batch a release
        answered. Raises only what ``source`` raises."""
        summaries = {
            release: ReleaseSummary(release, failed=self.failed.get(release)) for release in self.releases
        }
        run = _Check(self, summaries, on_record, on_batch)
        last: str | None = None
        for batch in source.read(batch_size=batch_size):
            run.batch(batch, last)
            last = batch[-1].key
        return UpgradeResult(self.release_a, summaries)


def check_upgrade(
    source: Source,
    against: Sequence[str],
    *,
    cache: Path | None = None,
    find_links: Path | None = None,
    uv: str | None = None,
    provider: str | None = None,
    batch_size: int = 200,
    timeout: float = PROBE_TIMEOUT,
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
        on_release=on_release,
    ) as check:
        return check.run(source, batch_size=batch_size, on_record=on_record, on_batch=on_batch)


@dataclass
class _Check:
    """One run's state: the check's probes, this run's summaries, and where findings go."""

    check: UpgradeCheck
    summaries: dict[str, ReleaseSummary]
    on_record: Callable[[PairRecord], None] | None
    on_batch: Callable[[str, int], None] | None

    def batch(self, batch: list[Stored], after: str | None) -> None:
        """Observe one batch on A while each probe works on it, then pair and report, release by release."""
        # A first, in this process: what the probes get includes A's repair output for B to load.
        prepared = [_prepare(stored, self.check.provider) for stored in batch]
        items = [
            {
                "history": base64.b64encode(p.history).decode(),
                "other_repaired": None if p.repaired is None else base64.b64encode(p.repaired).decode(),
            }
            for p in prepared
            if p.history is not None
        ]
        request = {"provider": self.check.provider, "histories": items}
        pending = {release: probe.submit(request) for release, probe in self.check.probes.items() if items}
        for release, summary in self.summaries.items():
            if release in self.check.failed:
                summary.failed = self.check.failed[release]
                continue
            answers: Iterator[Json] = iter(())
            if release in pending:
                try:
                    answers = iter(self.check.probes[release].answer(pending[release], len(items), after))
                except CompareError as exc:
                    self.check.give_up(release, f"{exc}; from there on, not checked")
                    summary.failed = self.check.failed[release]
                    continue
            for one in prepared:
                b = next(answers) if one.history is not None else _not_a_history(one)
                record = pair(one.key, self.check.release_a, release, a=one.a, a_data=one.a_data, b=b)
                summary.add(record)
                if self.on_record is not None:
                    self.on_record(record)
            if self.on_batch is not None:
                self.on_batch(release, len(batch))
