"""``histfix scan SOURCE --against RELEASE[,RELEASE...]``: the upgrade check's command line.

Parses nothing itself (``histfix scan`` owns the options) and only prints; the work is
:func:`histfix.upgrade.check_upgrade`. A release that could not be checked is bad input
(:data:`.exits.EXIT_BAD_INPUT`): the answer would be incomplete.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .exits import EXIT_BAD_INPUT, EXIT_FOUND, EXIT_INTERRUPTED, EXIT_OK
from .shared import fail

if TYPE_CHECKING:
    from ..store._source import Source
    from ..upgrade import PairRecord, ReleaseSummary, UpgradeResult

__all__ = ["run_upgrade_scan"]


class _Bars:
    """One progress bar per release on stderr, counting its histories, when stderr is a terminal
    and tqdm is installed (``histfix[progress]``); nothing otherwise, so pipes and logs stay clean."""

    def __init__(self, releases: list[str], total: int | None) -> None:
        self._releases = releases
        self._bars: dict[str, Any] = {}

    def start(self, total: int | None) -> None:
        """Show the bars (``total``: histories in the store, when known)."""
        if not sys.stderr.isatty():
            return
        try:
            from tqdm import tqdm  # type: ignore[import-untyped,import-not-found,unused-ignore]
        except ImportError:
            return
        for position, release in enumerate(self._releases):
            self._bars[release] = tqdm(
                total=total, unit=" histories", desc=release, position=position, file=sys.stderr
            )

    def step(self, release: str, count: int) -> None:
        if release in self._bars:
            self._bars[release].update(count)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


def _counts(counter: Any) -> str:
    return ", ".join(f"{name} {count:,}" for name, count in counter.most_common()) or "none"


def _print_release(summary: ReleaseSummary, release_a: str) -> None:
    b = summary.release
    print(f"{release_a} -> {b}: {summary.breaking:,} of {summary.histories:,} histories would break")
    print(
        f"  pydantic-ai's own loader: loads on both {summary.loads_on_both:,}; on {release_a} only "
        f"{summary.loads_on_a_only:,}; on {b} only {summary.loads_on_b_only:,}; "
        f"on neither {summary.loads_on_neither:,}"
    )
    print(f"  histfix.load_json: loads on {release_a} but not on {b}: {summary.load_json_on_a_only:,}")
    print(f"  {b}'s repair would change: {summary.b_repair_changes:,} ({_counts(summary.by_b_change)})")
    print(f"  what breaks: {_counts(summary.breaks)}")
    if summary.lost_fields or summary.lost_bookkeeping:
        trip = f"the round trip {release_a} -> {b} -> {release_a}"
        print(f"  {trip} loses, changing behaviour: {_counts(summary.lost_fields)}")
        print(f"  {trip} loses, bookkeeping no model sees: {_counts(summary.lost_bookkeeping)}")
    if summary.repair_fields:
        print(
            f"  histfix.repair writes otherwise on {b}, changing behaviour: {_counts(summary.repair_fields)}"
        )
    if summary.upstream_fields:
        print(
            f"  pydantic-ai's own repair_messages writes otherwise on {b}, changing behaviour: "
            f"{_counts(summary.upstream_fields)}"
        )
    if summary.repair_bookkeeping or summary.upstream_bookkeeping:
        print(
            f"  written otherwise in bookkeeping only: histfix.repair {summary.repair_bookkeeping:,}, "
            f"repair_messages {summary.upstream_bookkeeping:,}"
        )
    if summary.worst:
        print("  keys that would break (the first ones):")
        for key, reason in summary.worst:
            print(f"    {key}: {reason}")
        more = summary.breaking - len(summary.worst)
        if more > 0:
            print(f"    ... and {more:,} more (--jsonl lists every one)")
    if summary.failed is not None:
        print(f"  NOT CHECKED to the end: {summary.failed}")


def _print_summary(result: UpgradeResult, url: str, seconds: float) -> None:
    against = ", ".join(result.releases)
    print(
        f"{url}: checked on pydantic-ai-slim {result.release_a} (installed) against {against} ({seconds:.1f} s)"
    )
    for summary in result.releases.values():
        if summary.failed is not None and summary.histories == 0:
            print(f"{result.release_a} -> {summary.release}: not checked: {summary.failed}")
        else:
            _print_release(summary, result.release_a)
    if result.failed:
        print(f"incomplete: {len(result.failed)} release(s) could not be checked (see above)")
    elif result.breaking:
        print(f"would break: {result.breaking:,} history/release pairs (--jsonl for every record)")
    else:
        print("nothing would break")


def run_upgrade_scan(args: argparse.Namespace, *, source: Source | None = None) -> int:
    """``histfix scan SOURCE --against R[,R...] [--dask ADDRESS]``, its options already parsed;
    ``source`` is the store already open when the caller opened it (a ConversationStore, checked
    on this machine), else ``args.source`` is."""
    from .._compare import environments as compare
    from ..store import StoreError
    from ..upgrade import CheckError

    started = time.perf_counter()
    on_dask = getattr(args, "dask", None) is not None and source is None
    try:
        releases = compare.parse_releases(args.against)
        if not on_dask and args.find_links is not None and not Path(args.find_links).is_dir():
            raise ValueError(f"--find-links {args.find_links}: no such folder")
    except (ValueError, compare.CompareError) as exc:
        if source is not None:
            source.close()
        return fail(str(exc).replace("--releases", "--against"))
    bars = _Bars(releases, None)

    def on_record(record: PairRecord) -> None:
        if args.jsonl:
            print(json.dumps(record.as_json()), flush=False)

    def on_release(release: str, reason: str | None) -> None:
        if reason is not None:
            print(
                f"histfix: --against {release}: {reason.rstrip('.')}; the other releases go on",
                file=sys.stderr,
            )

    try:
        if on_dask:
            result, url = _on_dask(args, releases, on_record, on_release, bars)
        else:
            result, url = _here(args, releases, on_record, on_release, bars, source)
    except (ValueError, compare.CompareError, CheckError) as exc:  # StoreError too
        what = (
            str(exc)
            if isinstance(exc, (StoreError, CheckError))
            else str(exc).replace("--releases", "--against")
        )
        return fail(what)
    except KeyboardInterrupt:
        print("histfix: interrupted; nothing was written (scan only reads)", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        bars.close()
    if not args.jsonl:
        _print_summary(result, url, time.perf_counter() - started)
    if result.failed:
        return EXIT_BAD_INPUT
    return EXIT_FOUND if result.breaking else EXIT_OK


def _here(  # noqa: PLR0917 (run_upgrade_scan's reporters, handed on)
    args: argparse.Namespace,
    releases: list[str],
    on_record: Callable[[PairRecord], None],
    on_release: Callable[[str, str | None], None],
    bars: _Bars,
    opened: Source | None,
) -> tuple[UpgradeResult, str]:
    """The check on this machine: ``--jobs`` probes per release."""
    from .._compare import environments as compare
    from ..store import open_source
    from ..store._runner import default_jobs
    from ..upgrade import check_upgrade

    try:
        uv = compare.find_uv()
    except BaseException:
        if opened is not None:
            opened.close()
        raise
    with opened if opened is not None else open_source(args.source) as source:
        bars.start(source.count())
        result = check_upgrade(
            source,
            releases,
            cache=Path(args.cache_dir) if args.cache_dir else None,
            find_links=Path(args.find_links).resolve() if args.find_links else None,
            uv=uv,
            provider=args.provider,
            batch_size=args.batch_size,
            jobs=getattr(args, "jobs", None) or default_jobs(),
            on_record=on_record,
            on_release=on_release,
            on_batch=bars.step,
        )
    return result, source.url


def _on_dask(
    args: argparse.Namespace,
    releases: list[str],
    on_record: Callable[[PairRecord], None],
    on_release: Callable[[str, str | None], None],
    bars: _Bars,
) -> tuple[UpgradeResult, str]:
    """The check on a Dask cluster: each worker checks its partitions, building or reusing the
    releases' environments itself (--cache-dir and --find-links are paths on the workers)."""
    try:
        from ..store import dask as store_dask
        from ..upgrade import dask as upgrade_dask
    except ImportError:
        raise ValueError("--dask needs Dask: pip install 'histfix[dask]'") from None
    from distributed import KilledWorker

    from .._oneline import first_line
    from ..store.sources import mask_password
    from .shared import dask_client

    # paths on the workers: this machine's, resolved, when the cluster runs here
    where = (lambda path: str(Path(path).resolve())) if args.dask == "local" else str
    client = dask_client(args.dask, args.jobs)
    stream: Any = None
    try:
        store_dask.check_workers(client)
        parts = upgrade_dask.check_bag(
            store_dask.read_source(args.source),
            releases,
            provider=args.provider,
            cache=where(args.cache_dir) if args.cache_dir else None,
            find_links=where(args.find_links) if args.find_links else None,
        )
        bars.start(None)
        stream = store_dask.iter_records(parts, client)
        result = upgrade_dask.gather(
            stream, releases, on_record=on_record, on_release=on_release, on_batch=bars.step
        )
    except KilledWorker as exc:
        raise ValueError(
            f"the Dask cluster lost the workers running this check ({first_line(exc)}); "
            "it did not complete, so nothing is summarized"
        ) from None
    except (OSError, TimeoutError) as exc:
        raise ValueError(
            f"the Dask cluster went away ({first_line(exc)}); the check did not complete"
        ) from None
    finally:
        if stream is not None:
            stream.close()  # cancels what the cluster still has of the check, while it is connected
        with contextlib.suppress(Exception):  # a cluster gone already has no probes left to stop
            client.run(upgrade_dask.stop_probes)
        store_dask.disconnect(client)
    return result, mask_password(args.source)
