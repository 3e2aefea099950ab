"""The upgrade check on Dask: ``histfix scan SOURCE --against RELEASE --dask ADDRESS``.

``pip install 'histfix[dask,compare]'`` on this machine and on every worker. Each partition of
the store (:func:`histfix.store.dask.read_source`) is checked on the worker that runs it: the
installed release (A: every worker must run this process's histfix and pydantic-ai, see
:func:`histfix.store.dask.check_workers`) in the worker's own process, and each release checked
against in a probe process the worker starts once and keeps for the run, in that release's
environment. How the environment reaches a worker: the worker builds it itself, with uv, the
first time it needs it, and reuses it afterwards: in ``cache`` (a path on the worker, such as a
shared file system; default the worker's ``$HISTFIX_COMPARE_CACHE`` or user cache), from the
package index or, with ``find_links``, from that folder of wheels on the worker (offline). Workers
on one machine build each release once between them. The records and the summary equal the local
check's (``histfix scan --against`` without ``--dask``) on the same store::

    from histfix.store import dask as store_dask
    from histfix.upgrade import dask as upgrade_dask

    parts = upgrade_dask.check_bag(store_dask.read_source("chats.jsonl"), ["1.107.10"])
    result = upgrade_dask.gather(store_dask.iter_records(parts, client), parts)
"""

from __future__ import annotations

import atexit
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import dask.bag as db
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("histfix.upgrade.dask needs Dask: pip install 'histfix[dask]'") from exc

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
from ..store._source import Stored
from ._check import NOT_ON, BatchRecords, Gathered, check_batch, prepare, records_of
from ._pairs import PairRecord, UpgradeResult
from ._probes import PROBE_TIMEOUT, Probe, probe_command
from ._side import InProcess, ReleaseSide

__all__ = ["Plan", "check_bag", "gather", "stop_probes"]


@dataclass(frozen=True)
class Plan:
    """What every partition's task needs (it travels to the workers in the task graph)."""

    releases: tuple[str, ...]
    release_a: str
    provider: str | None = None
    #: paths on the workers; None: each worker's default cache, and the package index
    cache: str | None = None
    find_links: str | None = None
    uv: str | None = None
    timeout: float = PROBE_TIMEOUT


# --- on a worker ----------------------------------------------------------------------------------

_LOCK = threading.Lock()
#: This worker process's sides, kept between partitions (and runs): A's, and each release's probe
#: or why it could not start. Stopped when the worker exits, or by stop_probes.
_SIDES: dict[tuple[Any, ...], Any] = {}


def _scratch() -> Path:
    found = _SIDES.get(("scratch",))
    if found is None:
        folder = tempfile.TemporaryDirectory(prefix="histfix-upgrade-worker-")
        found = _SIDES[("scratch",)] = (folder, histfix_on_a_path(Path(folder.name)))
        atexit.register(stop_probes)
    path: Path = found[1]
    return path


def _side_a(plan: Plan) -> InProcess:
    key = ("a", plan.provider)
    side = _SIDES.get(key)
    if side is None:
        side = _SIDES[key] = InProcess(ReleaseSide())
        side.request({"op": "setup", "provider": plan.provider}, [], "to set up")
    assert isinstance(side, InProcess)
    return side


def _probe(plan: Plan, release: str, hello: dict[str, Any]) -> Probe | str:
    """This worker's probe of ``release`` for the plan, started (its environment built) the
    first time; or why it cannot be."""
    key = ("b", release, plan.provider, plan.cache, plan.find_links, plan.uv, plan.timeout)
    found = _SIDES.get(key)
    if found is None:
        try:
            settings = Settings(
                uv=plan.uv or find_uv(),
                cache=Path(plan.cache) if plan.cache else default_cache(),
                find_links=Path(plan.find_links) if plan.find_links else None,
            )
            env, _ = environment(release, settings)
            argv, variables = probe_command(python_in(env), _scratch(), inherit_path=False)
            found = Probe(argv, variables, release, plan.timeout)
            try:
                found.hello()
                setup = {"op": "setup", "provider": plan.provider, "fields": hello["fields"]}
                found.request({**setup, "upstream": hello["upstream"]}, [], "to set up")
            except CompareError:
                found.stop()
                raise
        except CompareError as exc:
            found = str(exc)
        _SIDES[key] = found
    return found


def _check_part(items: Iterable[Stored], plan: Plan) -> list[BatchRecords]:
    """One partition, checked on this worker: its records per release, and why any release could not."""
    prepared = [prepare(stored) for stored in items]
    with _LOCK:  # one partition at a time per worker process: its probes answer one request at a time
        a = _side_a(plan)
        started: dict[str, Probe] = {}
        cannot: dict[str, str] = {}
        for release in plan.releases:
            probe = _probe(plan, release, a.side.hello())
            if isinstance(probe, str):
                cannot[release] = probe
            else:
                started[release] = probe
        where = f"on the partition starting at {prepared[0].key!r}" if prepared else "on an empty partition"
        translations = any(probe.hello().get("translates") for probe in started.values())
        done = check_batch(
            prepared, a, dict(started), where=where, release_a=plan.release_a, translations=translations
        )
        for release in done.failed:  # a probe that failed mid-run is not asked again
            _forget(plan, release)
    records = records_of(done, [r for r in plan.releases if r not in cannot], plan.release_a)
    records.failed |= cannot
    return [records]


def _forget(plan: Plan, release: str) -> None:
    key = ("b", release, plan.provider, plan.cache, plan.find_links, plan.uv, plan.timeout)
    probe = _SIDES.get(key)
    if isinstance(probe, Probe):
        probe.stop()
        _SIDES[key] = f"its probe failed on an earlier partition{NOT_ON}"


def stop_probes() -> None:
    """Stop this worker's probes and remove its scratch folder (``client.run(stop_probes)`` at the
    end of a run; a worker that exits does it itself)."""
    with _LOCK:
        for key, side in list(_SIDES.items()):
            if isinstance(side, Probe):
                side.stop()
            elif key == ("scratch",):
                side[0].cleanup()
        _SIDES.clear()


# --- on the client ------------------------------------------------------------------------------------


def check_bag(
    items: db.Bag,
    against: Sequence[str],
    *,
    provider: str | None = None,
    cache: str | Path | None = None,
    find_links: str | Path | None = None,
    uv: str | None = None,
    timeout: float = PROBE_TIMEOUT,
) -> db.Bag:
    """The upgrade check of every item (a :class:`~histfix.store.Stored`) against each release of
    ``against``, as a bag of one :class:`BatchRecords` per partition, in partition order
    (:func:`gather` adds them up). ``cache``, ``find_links`` and ``uv`` are as each worker sees
    them. Bad ``against`` or ``provider``: ValueError, here."""
    import histfix

    try:
        releases = parse_releases(",".join(against))
    except CompareError as exc:
        raise ValueError(str(exc).replace("--releases", "against")) from None
    if provider is not None:
        from .._profiles.targets import resolve_provider

        resolve_provider(provider)
    plan = Plan(
        tuple(releases),
        histfix.backend_info().version,
        provider,
        None if cache is None else str(cache),
        None if find_links is None else str(find_links),
        uv,
        timeout,
    )
    return items.map_partitions(_check_part, plan)


def gather(
    parts: Iterable[BatchRecords],
    releases: Sequence[str],
    *,
    on_record: Callable[[PairRecord], None] | None = None,
    on_release: Callable[[str, str | None], None] | None = None,
    on_batch: Callable[[str, int], None] | None = None,
) -> UpgradeResult:
    """The :class:`~histfix.upgrade.UpgradeResult` of :func:`check_bag`'s partitions, taken in
    order (``iter_records`` of the bag): the callbacks as :func:`~histfix.upgrade.check_upgrade`'s."""
    import histfix

    failed: dict[str, str] = {}

    def give_up(release: str, reason: str) -> None:
        failed.setdefault(release, reason)
        if on_release is not None:
            on_release(release, reason)

    ordered = parse_releases(",".join(releases))
    gathered = Gathered(
        histfix.backend_info().version,
        ordered,
        failed=failed,
        give_up=give_up,
        on_record=on_record,
        on_batch=on_batch,
    )
    for part in parts:
        gathered.add(part)
    return gathered.result()
