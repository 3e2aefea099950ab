"""``histfix scan SOURCE --against RELEASE[,RELEASE...]``: the upgrade check's command line.

Parses nothing itself (``histfix scan`` owns the options) and only prints; the work is
:func:`histfix.store._upgrade.check_upgrade`. Exit status: 0 nothing would break, 1 something
would, 2 bad input or a release that could not be checked (the answer would be incomplete).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store._source import Source
    from ..store._upgrade import PairRecord, ReleaseSummary, UpgradeResult

__all__ = ["run_upgrade_scan"]

EXIT_OK, EXIT_BREAKS, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
#: A shell's status for a command whose output pipe closed (128 + SIGPIPE).
EXIT_BROKEN_PIPE = 141


class _Bars:
    """One progress bar per release on stderr when it is a terminal and tqdm is installed
    (``histfix[progress]``); nothing otherwise, so pipes and logs stay clean."""

    def __init__(self, releases: list[str], total: int | None) -> None:
        self._bars: dict[str, Any] = {}
        if not sys.stderr.isatty():
            return
        try:
            from tqdm import tqdm  # type: ignore[import-untyped,import-not-found,unused-ignore]
        except ImportError:
            return
        for position, release in enumerate(releases):
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
    if summary.lost_fields:
        print(f"  the round trip {release_a} -> {b} -> {release_a} loses: {_counts(summary.lost_fields)}")
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
    """``histfix scan SOURCE --against R[,R...]``, its options already parsed; ``source`` is the
    store already open when the caller opened it (a ConversationStore), else ``args.source`` is."""
    from .._compare import environments as compare
    from ..store import StoreError, open_source
    from ..store._upgrade import check_upgrade

    started = time.perf_counter()
    try:
        releases = compare.parse_releases(args.against)
        if args.find_links is not None and not Path(args.find_links).is_dir():
            raise ValueError(f"--find-links {args.find_links}: no such folder")
        uv = compare.find_uv()
        if source is None:
            source = open_source(args.source)
    except (ValueError, compare.CompareError) as exc:
        if source is not None:
            source.close()
        print(f"histfix: {str(exc).replace('--releases', '--against')}", file=sys.stderr)
        return EXIT_BAD_INPUT
    bars: _Bars | None = None

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
        with source:
            bars = _Bars(releases, source.count())
            result = check_upgrade(
                source,
                releases,
                cache=Path(args.cache_dir) if args.cache_dir else None,
                find_links=Path(args.find_links).resolve() if args.find_links else None,
                uv=uv,
                provider=args.provider,
                batch_size=args.batch_size,
                on_record=on_record,
                on_release=on_release,
                on_batch=bars.step,
            )
    except StoreError as exc:
        print(f"histfix: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("histfix: interrupted; nothing was written (scan only reads)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `... --jsonl | head`: the reader has what it wanted
        # Python would flush stdout again at exit and fail once more; point it at nothing instead.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    finally:
        if bars is not None:
            bars.close()
    if not args.jsonl:
        _print_summary(result, source.url, time.perf_counter() - started)
    if result.failed:
        return EXIT_BAD_INPUT
    return EXIT_BREAKS if result.breaking else EXIT_OK
