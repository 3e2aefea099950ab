"""The store commands: ``histfix scan``, ``histfix repair STORE`` and ``histfix restore``.

They only parse and print; the work is in :mod:`histfix.store`, imported when a store command
runs, so ``histfix --help`` and ``info`` stay fast. ``histfix repair`` treats its argument as a
store when it is a directory, a ``.jsonl`` file or a ``scheme://`` URL, and as one history file
otherwise (:func:`is_store_target`; :class:`.shared.Forms` finds the argument).
"""

from __future__ import annotations

import argparse
import os
import sys

from .exits import EXIT_FOUND, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED
from .shared import InputError, Parser, Terminated, described, fail, provider_name

TYPE_CHECKING = False  # typing itself is not imported: the fast paths import this module
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..store._backup import BatchBackup
    from ..store._record import Record
    from ..store._runner import RepairResult
    from ..store._summary import Summary

__all__ = ["is_store_target", "repair_parser", "restore_parser", "scan_parser"]

DEFAULT_BATCH_SIZE = 500
#: ``--lock-timeout``'s default: the store's own (histfix.store._source.DEFAULT_LOCK_TIMEOUT, which a
#: test holds equal), here without importing the store for ``--help``.
DEFAULT_LOCK_TIMEOUT = 5.0

SOURCE_HELP = (
    "a store: DIR (every *.json below it), FILE.jsonl, sqlite:///PATH.db?table=T&key=K&column=C, "
    "postgresql://USER:PW@HOST/DB?table=T&key=K&column=C, or a pydantic-ai ConversationStore "
    "py:MODULE:ATTR (with --scope S; see `histfix scan py:M:A --help`)"
)


def is_store_target(target: str) -> bool:
    """Whether ``histfix repair TARGET`` repairs a store rather than one history file: a
    directory, a ``.jsonl`` file or a ``scheme://`` URL."""
    if "://" in target or target.endswith(".jsonl"):
        return True
    return os.path.isdir(target or ".")  # Path("") is the current directory


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    from .shared import add_provider, positive

    parser.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    add_provider(parser, "check (and repair) for what this provider rejects")
    parser.add_argument("--jobs", type=positive, metavar="N", help="worker processes (default: every core)")
    parser.add_argument(
        "--batch-size",
        type=positive,
        default=DEFAULT_BATCH_SIZE,
        metavar="N",
        help=f"histories per batch ({DEFAULT_BATCH_SIZE})",
    )
    parser.add_argument(
        "--include-pending",
        action="store_true",
        help="also repair histories a run can resume (pending_calls, pending_request), closing their "
        "open calls; by default they are left byte for byte",
    )
    parser.add_argument(
        "--jsonl", action="store_true", help="print one JSON record per history instead of the summary"
    )
    parser.add_argument(
        "--lock-timeout",
        type=_seconds,
        default=DEFAULT_LOCK_TIMEOUT,
        metavar="SECONDS",
        help="how long to wait for a row (PostgreSQL) or the database file (SQLite) another connection "
        f"holds locked ({DEFAULT_LOCK_TIMEOUT:g}); a row still held is left for --resume, a file still "
        "locked stops the run",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


#: What ``histfix --help`` lists for the store commands (each store form's summary is its own).
SCAN_SUMMARY = "check every history in a store, read-only (exit 1 if repair would change any)"
RESTORE_SUMMARY = "put the originals from a repair's --backup back into the store, byte for byte"


def scan_parser() -> Parser:
    """``histfix scan SOURCE``: a directory, JSONL, SQLite or PostgreSQL store."""
    scan = Parser(
        prog="histfix scan",
        **described(
            SCAN_SUMMARY,
            "histfix scan sqlite:///app.db?table=chats&key=id&column=messages --provider anthropic",
            "Per history: loads on this release or why not, classify kind, check problems, what repair\n"
            "would change, size. A summary table, or --jsonl records. `histfix repair SOURCE --write\n"
            "--backup FILE` then repairs them (see `histfix repair SOURCE --help` and docs/stores.md).",
        ),
    )
    _add_run_options(scan)
    _add_upgrade_options(scan)
    _add_dask_options(scan)
    scan.set_defaults(run=_scan, parser=scan)
    return scan


def restore_parser() -> Parser:
    """``histfix restore BACKUP SOURCE``: a directory, JSONL, SQLite or PostgreSQL store."""
    restore = Parser(
        prog="histfix restore",
        **described(
            RESTORE_SUMMARY,
            "histfix restore backup.jsonl sqlite:///app.db?table=chats&key=id&column=messages",
            "Only histories that still hold what the repair wrote are restored; the rest are named.",
        ),
    )
    restore.add_argument(
        "backup",
        metavar="BACKUP",
        help="the --backup of a `histfix repair --write`: its file, or table:NAME in SOURCE's database",
    )
    restore.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    restore.set_defaults(run=_restore, parser=restore)
    return restore


def _add_upgrade_options(scan: argparse.ArgumentParser) -> None:
    upgrade = scan.add_argument_group(
        "upgrade check (needs histfix[compare])",
        "--against checks every history on other pydantic-ai-slim releases too, each in a cached "
        "virtualenv as `histfix compare` builds them, in --jobs probe processes per release (or on "
        "the --dask cluster's workers); only what changes behaviour breaks (docs/upgrading.md)",
    )
    upgrade.add_argument(
        "--against",
        metavar="R[,R...]",
        help="releases to check against the installed one: loads, repair, what is sent, the round trip",
    )
    upgrade.add_argument(
        "--find-links", metavar="DIR", help="install releases from the wheels in DIR alone (offline)"
    )
    upgrade.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where the environments live (default: $HISTFIX_COMPARE_CACHE or the user cache)",
    )


def _add_dask_options(scan: argparse.ArgumentParser) -> None:
    group = scan.add_argument_group(
        "on Dask (needs histfix[dask])",
        "--dask runs the scan's per-history work on a Dask cluster: the same records and summary "
        "(docs/dask.md). SOURCE may then also be JSONL on any fsspec path (s3://BUCKET/chats.jsonl).",
    )
    group.add_argument(
        "--dask",
        metavar="ADDRESS|local",
        help="the scheduler's address (tcp://HOST:8786), or `local` for a cluster of --jobs worker "
        "processes on this machine",
    )


def repair_parser() -> Parser:
    """``histfix repair SOURCE``: a directory, JSONL, SQLite or PostgreSQL store."""
    parser = Parser(
        prog="histfix repair",
        **described(
            "Repair every history in a store, in place, in batches (a dry run without --write).",
            "histfix repair chats/ --write --backup chats-backup.jsonl",
            "SOURCE is a store when it is a directory, a .jsonl file or a scheme:// URL; anything else is\n"
            "one history file (histfix repair FILE --help). Histories a run can resume are left alone\n"
            "unless --include-pending. See docs/stores.md for the guarantees.",
        ),
    )
    _add_run_options(parser)
    parser.add_argument("--write", action="store_true", help="write the repairs (needs --backup)")
    parser.add_argument(
        "--backup",
        metavar="FILE|table:NAME",
        help="where every original goes before it is replaced (restore reads it): a new JSONL file, "
        "or for an SQLite or PostgreSQL source table:NAME, a new table in the same database written "
        "in the same transaction as each batch",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the run recorded in --backup after its last key"
    )
    parser.set_defaults(run=_repair, usage=_repair_usage, parser=parser)
    return parser


# --- running ---------------------------------------------------------------------------------------


class _Progress:
    """A progress bar with rate and ETA on stderr when it is a terminal and tqdm is installed
    (``histfix[progress]``); nothing otherwise, so pipes and logs stay clean."""

    def __init__(self, count: Callable[[], int | None]) -> None:
        self._bar: Any = None
        if not sys.stderr.isatty():
            return
        try:
            from tqdm import tqdm  # type: ignore[import-untyped,import-not-found,unused-ignore]
        except ImportError:
            return
        # counted only for a bar: a count can be a pass over the whole store
        self._bar = tqdm(total=count(), unit=" histories", file=sys.stderr)

    def step(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _count_line(counter: Any) -> str:
    return ", ".join(f"{name} {count:,}" for name, count in counter.most_common()) or "none"


def _print_summary(
    summary: Summary, source: str, seconds: float, provider: str | None, null_keys: int
) -> None:
    rate = summary.total / seconds if seconds > 0 else 0.0
    print(f"{summary.total:,} histories in {source} ({seconds:.1f} s, {rate:,.0f}/s)")
    loaded = summary.total - summary.by_action["not_loaded"]
    print(f"  load on this release: {loaded:,}; do not: {summary.by_action['not_loaded']:,}")
    print(f"  by kind:     {_count_line(summary.by_kind)}")
    print(f"  by problem:  {_count_line(summary.by_problem)}")
    who = provider or "any provider"
    print(f"  {who} rejects: {_count_line(summary.by_rejected)}")
    print(f"  repair would change: {summary.would_change:,} ({_count_line(summary.by_change)})")
    if summary.removed:
        print(f"  content repair removes: {summary.removed:,} parts (listed by `histfix repair`)")
    if summary.by_action["left_pending"]:
        print(
            f"  left as they are, resumable: {summary.by_action['left_pending']:,} "
            "(--include-pending repairs them)"
        )
    if null_keys:
        print(f"  not read, NULL key: {null_keys:,} rows")
    if summary.worst:
        print("worst keys (problems):")
        for key, weight in summary.worst:
            print(f"  {key}  {weight}")
    if summary.not_loaded:
        print("not loaded:")
        for key, error in summary.not_loaded:
            print(f"  {key}: {error}")
        more = summary.by_action["not_loaded"] - len(summary.not_loaded)
        if more > 0:
            print(f"  ... and {more:,} more (--jsonl lists every one)")


def _null_keys_reason(count: int) -> str:
    rows = "1 row has" if count == 1 else f"{count:,} rows have"
    return f"{rows} a NULL key: not read (histfix finds and writes each row by its key; give them one)"


def _null_keys_record(count: int) -> dict[str, object]:
    """The --jsonl line for rows with a NULL key: one line for all of them, before the records."""
    return {
        "key": None,
        "rows": count,
        "action": "not_loaded",
        "loads": False,
        "error": _null_keys_reason(count),
    }


def _emit(record: Record, summary: Summary, jsonl: bool, report: bool) -> None:
    """Count the record; print it (--jsonl), or with ``report`` (repair) what repair does to it:
    its changes and every content it removes, with its key."""
    summary.add(record)
    if jsonl:
        import json

        print(json.dumps(record.as_json()))
    elif report and record.would_change:
        changes = ", ".join(f"{kind} {count}" for kind, count in record.changes.items())
        print(f"{record.key}: {changes}")
        for removed in record.removed:
            print(
                f"{record.key}: messages[{removed.message_index}]: {removed.description}; "
                f"its content was: {removed.preview}"
            )


def _resume_hint(backup: BatchBackup | None) -> str:
    """Where a stopped --write run got to, for its one line."""
    if backup is None:
        return ""
    if backup.last_committed is None:
        return "; no batch committed yet, --resume starts over (nothing is written twice)"
    return f"; written through {backup.last_committed!r}, --resume continues after it"


def _stopped(stop: BaseException, where: str = "") -> int:
    """Ctrl-C or SIGTERM: the one line saying so (and ``where`` the run got to), and its status."""
    if isinstance(stop, Terminated):
        print(f"histfix: terminated (SIGTERM){where}", file=sys.stderr)
        return EXIT_TERMINATED
    print(f"histfix: interrupted{where}", file=sys.stderr)
    return EXIT_INTERRUPTED


def _quiet_driver_logs() -> None:
    """The command reports a store's failure in one line itself; a database driver's own warning
    about cleaning up after it (psycopg's "error ignored terminating ...", printed by logging's
    last-resort handler when nothing is configured) would be a second, confusing one."""
    import logging

    logging.getLogger("psycopg").addHandler(logging.NullHandler())


def _run(args: argparse.Namespace, *, write: bool, report: bool) -> int:
    import json
    import time

    _quiet_driver_logs()

    from ..store import StoreError, open_source
    from ..store._backup import open_backup
    from ..store._record import Options
    from ..store._runner import claim, default_jobs, repair_source
    from ..store._summary import Summary
    from ..store._workers import WorkerLost

    backup: BatchBackup | None = None
    summary = Summary()
    started = time.perf_counter()
    try:
        provider_name(args.provider)
        source = open_source(args.source, lock_timeout=args.lock_timeout)
    except (ValueError, InputError) as exc:
        return fail(str(exc))
    progress: _Progress | None = None
    result: RepairResult | None = None
    try:
        with source:
            after = None
            claim(source, writing=write)  # before a backup is made for a run that cannot go on
            if write:
                backup = open_backup(args.backup, source, resume=args.resume)
                after = backup.last_committed
            progress = _Progress(lambda: source.count(after=after))
            bar = progress

            def on_record(record: Record) -> None:
                bar.step()
                _emit(record, summary, args.jsonl, report)

            def on_null_keys(count: int) -> None:
                if count and args.jsonl:
                    print(json.dumps(_null_keys_record(count)))

            options = Options(provider=args.provider, include_pending=args.include_pending)
            result = repair_source(
                source,
                options,
                backup=backup,
                jobs=args.jobs or default_jobs(),
                batch_size=args.batch_size,
                after=after,
                on_record=on_record,
                on_null_keys=on_null_keys,
            )
    except StoreError as exc:
        return fail(f"{exc}{_resume_hint(backup)}")
    except WorkerLost as exc:
        return fail(f"{exc}: the run stopped there{_resume_hint(backup)}")
    except (KeyboardInterrupt, Terminated) as stop:
        return _stopped(stop, _resume_hint(backup))
    except BrokenPipeError:
        if backup is not None:  # a --write run stops between batches: say where, as for Ctrl-C
            print(f"histfix: output closed, stopped{_resume_hint(backup)}", file=sys.stderr)
        raise
    finally:
        if progress is not None:
            progress.close()
        if backup is not None:
            backup.close()
    return _finish(args, summary, result, time.perf_counter() - started, source.url, write=write)


def _null_keys(url: str) -> int:
    """Rows of an SQL source whose key is NULL (never read, as in the local scan); 0 otherwise."""
    from ..store.sources import names_table, open_source

    if not names_table(url):
        return 0

    with open_source(url) as source:
        count = getattr(source, "null_keys", None)
        return int(count()) if count is not None else 0


def _run_dask(args: argparse.Namespace) -> int:
    """``histfix scan SOURCE --dask ADDRESS``: the per-history work on a Dask cluster, the records
    and summary as the local scan prints them. A cluster that loses the scan's work ends the run
    with one line and no summary, so nothing partial is shown as complete."""
    import json
    import time

    _quiet_driver_logs()
    started = time.perf_counter()
    try:
        provider_name(args.provider)
        from ..store import dask as on_dask
    except ImportError:
        return fail("--dask needs Dask: pip install 'histfix[dask]'")
    except (ValueError, InputError) as exc:
        return fail(str(exc))
    from distributed import KilledWorker

    from .._oneline import first_line
    from ..store._runner import RepairResult
    from ..store._summary import Summary
    from .shared import dask_client

    summary = Summary()
    progress: _Progress | None = None
    client: Any = None
    stream: Any = None
    null_keys = 0
    try:
        client = dask_client(args.dask, args.jobs)
        on_dask.check_workers(client)
        null_keys = _null_keys(args.source)
        if null_keys and args.jsonl:
            print(json.dumps(_null_keys_record(null_keys)))
        records = on_dask.examine_bag(
            on_dask.read_source(args.source), provider=args.provider, include_pending=args.include_pending
        )
        progress = _Progress(lambda: None)
        stream = on_dask.iter_records(records, client)
        for record in stream:
            progress.step()
            _emit(record, summary, args.jsonl, report=False)
    except ValueError as exc:  # StoreError too
        return fail(str(exc))
    except KilledWorker as exc:
        return fail(
            f"the Dask cluster lost the workers running this scan ({first_line(exc)}); "
            "it did not complete, so nothing is summarized"
        )
    except (OSError, TimeoutError) as exc:
        return fail(f"the Dask cluster went away ({first_line(exc)}); the scan did not complete")
    except (KeyboardInterrupt, Terminated) as stop:
        return _stopped(stop)
    finally:
        if progress is not None:
            progress.close()
        if stream is not None:
            stream.close()  # cancels what the cluster still has of the scan, while it is connected
        if client is not None:
            on_dask.disconnect(client)
    from ..store.sources import mask_password

    result = RepairResult(null_keys=null_keys)
    seconds = time.perf_counter() - started
    return _finish(args, summary, result, seconds, mask_password(args.source), write=False)


def _finish(
    args: argparse.Namespace,
    summary: Summary,
    result: RepairResult | None,
    seconds: float,
    url: str,
    *,
    write: bool,
) -> int:
    """Print what the run found and did; the exit status (1: something would change or was skipped)."""
    null_keys = result.null_keys if result is not None else 0
    if not args.jsonl:
        _print_summary(summary, url, seconds, args.provider, null_keys)
    if null_keys:
        print(f"histfix: {url}: {_null_keys_reason(null_keys)}", file=sys.stderr)
    if not write:
        if summary.would_change and not args.jsonl:
            how = "histfix repair SOURCE --write --backup FILE"
            print(f"dry run: {summary.would_change:,} histories would be repaired ({how})")
        return EXIT_FOUND if summary.would_change else EXIT_OK
    assert result is not None
    for key, reason in result.skipped:
        print(f"histfix: {key}: not written: {reason}", file=sys.stderr)
    if not args.jsonl:
        if result.written:
            print(f"repaired {result.written:,} histories; originals in {args.backup}")
        else:
            print("nothing to repair: every history is already as repair leaves it")
    return EXIT_FOUND if result.skipped or null_keys else EXIT_OK


def _scan(args: argparse.Namespace) -> int:
    if args.dask is not None:
        if args.jobs is not None and args.dask != "local":
            return fail("--jobs applies to --dask local only: a running cluster has its own workers")
        if args.batch_size != DEFAULT_BATCH_SIZE:
            return fail("--batch-size does not apply with --dask: its partitions are blocks of the store")
    if args.against is None:
        if args.find_links is not None or args.cache_dir is not None:
            return fail("--find-links and --cache-dir only apply with --against")
        if args.dask is not None:
            return _run_dask(args)
        return _run(args, write=False, report=False)
    if args.include_pending:
        return fail("--include-pending does not apply with --against")
    try:
        provider_name(args.provider)
    except InputError as exc:
        return fail(str(exc))
    from .upgrade import run_upgrade_scan

    return run_upgrade_scan(args)


def write_usage(args: argparse.Namespace, backup: str) -> None:
    """A store repair's --write, --backup and --resume go together; ``backup`` says what --write
    needs (a store's backup or a ConversationStore's journal)."""
    if args.write and not args.backup:
        args.parser.error(f"--write needs --backup {backup}")
    if args.resume and not args.write:
        args.parser.error("--resume needs --write and the --backup of the run to continue")
    if args.backup and not args.write:
        args.parser.error("--backup is only used with --write")


def _repair_usage(args: argparse.Namespace) -> None:
    write_usage(args, "FILE or table:NAME (the originals are saved there first)")


def _repair(args: argparse.Namespace) -> int:
    """``histfix repair STORE ...``, its usage checked."""
    return _run(args, write=args.write, report=True)


def _restore(args: argparse.Namespace) -> int:
    from ..store import open_source
    from ..store._backup import restore
    from ..store._runner import claim

    _quiet_driver_logs()

    try:
        with open_source(args.source) as source:
            claim(source, writing=True)
            result = restore(args.backup, source)
    except ValueError as exc:  # StoreError too
        return fail(str(exc))
    except (KeyboardInterrupt, Terminated) as stop:
        return _stopped(stop, "; run restore again to finish (restored ones are skipped)")
    for key, reason in result.skipped:
        print(f"histfix: {key}: not restored: {reason}", file=sys.stderr)
    already = f" ({result.already:,} already held their original)" if result.already else ""
    print(f"restored {result.restored:,} histories from {args.backup}{already}")
    return EXIT_FOUND if result.skipped else EXIT_OK
