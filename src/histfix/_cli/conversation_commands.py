"""The store commands over a pydantic-ai ``ConversationStore`` (``py:module.path:attr``), and ``migrate``.

``histfix scan|repair|restore`` with a ``py:`` target come here (:func:`names_a_conversation_store`)
with their own parsers, built from the store commands' options plus ``--scope`` (and for
``scan`` ``--branches``); the records, summary, progress, ``--jsonl`` and exit codes are the store
commands' own. ``histfix migrate SOURCE py:...`` moves a legacy store into one. The work is in
:mod:`histfix.store`, imported when a command runs.
"""

from __future__ import annotations

import argparse
import sys

from .exits import EXIT_FOUND, EXIT_INTERRUPTED, EXIT_OK
from .shared import InputError, Parser, fail, provider_name

TYPE_CHECKING = False  # typing itself is not imported: ``histfix --help`` passes through here
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..store._conversation_journal import Journal
    from ..store._migrate import MigrateResult, Migration
    from ..store._record import Record
    from ..store._runner import RepairResult
    from ..store._summary import Summary
    from ..store.sources._conversation import ConversationSource

__all__ = ["add_migrate", "form_parser", "names_a_conversation_store", "run_conversation_command"]

#: How the store commands name a ConversationStore on the command line.
PY_PREFIX = "py:"
TARGET_HELP = (
    "a pydantic-ai ConversationStore: py:MODULE.PATH:ATTR, the store object or a zero-argument "
    "factory of one (sync or async), imported from the current directory"
)
LEGACY_HELP = (
    "the store to move: DIR (every *.json below it), FILE.jsonl, sqlite:///PATH.db?table=T&key=K&column=C "
    "or postgresql://USER:PW@HOST/DB?table=T&key=K&column=C"
)
SCOPE_HELP = "only the conversations saved with this scope (ConversationStore's scope=)"


def names_a_conversation_store(targets: Sequence[str]) -> bool:
    """Whether ``scan``, ``repair`` or ``restore`` of these targets is of a ``py:`` ConversationStore."""
    return any(target.startswith(PY_PREFIX) for target in targets)


def add_migrate(command: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``migrate`` through ``_cli.build_parser``'s ``command`` helper."""
    from .shared import add_provider, positive
    from .store_commands import DEFAULT_BATCH_SIZE

    migrate = command(
        "migrate",
        "move every history of a store into a pydantic-ai ConversationStore (a dry run without --write)",
        "histfix migrate 'sqlite:///app.db?table=chats&key=id&column=messages' py:myapp.storage:store --write",
        "Each history is loaded with histfix.load_json (whatever release wrote it), repaired, and\n"
        "saved as a new conversation under its key; one the store already has is reported, never\n"
        "overwritten. Needs a pydantic-ai-slim with ConversationStore. See docs/conversation-store.md.",
    )
    migrate.add_argument("source", metavar="SOURCE", help=LEGACY_HELP)
    migrate.add_argument("target", metavar="py:MODULE:ATTR", help=TARGET_HELP)
    migrate.add_argument("--write", action="store_true", help="save the conversations (dry run without)")
    scope = migrate.add_mutually_exclusive_group()
    scope.add_argument("--scope", metavar="S", help="save every conversation with scope S")
    scope.add_argument(
        "--scope-field", metavar="NAME", help="save each with the scope in field NAME of its stored object"
    )
    migrate.add_argument(
        "--journal", metavar="FILE", help="record each conversation saved and how far the run got (new file)"
    )
    migrate.add_argument(
        "--resume", action="store_true", help="continue the run recorded in --journal after its last key"
    )
    migrate.add_argument(
        "--verify", action="store_true", help="load every migrated conversation back and compare it"
    )
    add_provider(migrate, "repair for what this provider rejects")
    migrate.add_argument(
        "--include-pending",
        action="store_true",
        help="also repair histories a run can resume (by default they are moved as they are)",
    )
    migrate.add_argument("--jobs", type=positive, metavar="N", help="worker processes (default: every core)")
    migrate.add_argument(
        "--batch-size", type=positive, default=DEFAULT_BATCH_SIZE, metavar="N", help="histories per batch"
    )
    migrate.set_defaults(run=_migrate)


# --- parsing scan / repair / restore of a ConversationStore ---------------------------------------


def form_parser(command: str) -> Parser:
    """The parser of ``histfix scan|repair|restore`` of a ConversationStore (``command``)."""
    from .shared import described
    from .store_commands import _add_run_options, _add_upgrade_options

    if command == "restore":
        parser = Parser(
            prog="histfix restore",
            **described(
                "Branch every conversation a repair saved back to the history it had before.",
                "histfix restore journal.jsonl py:myapp.storage:store",
                "Only conversations that still hold what the repair saved are branched back; the rest\n"
                "are named. The repaired history stays stored too, as a branch the record lists.",
            ),
        )
        parser.add_argument(
            "backup", metavar="JOURNAL", help="the --backup of a `histfix repair py:... --write`"
        )
        parser.add_argument("source", metavar="py:MODULE:ATTR", help=TARGET_HELP)
        parser.set_defaults(run=run_conversation_command, parser=parser)
        return parser
    summary = {
        "scan": "Check every conversation in a ConversationStore, read-only (exit 1 if repair would change any).",
        "repair": "Repair every conversation in a ConversationStore by its own rules (a dry run without --write).",
    }[command]
    parser = Parser(
        prog=f"histfix {command}",
        **described(
            summary,
            f"histfix {command} py:myapp.storage:store --scope team-a",
            "Each conversation is read through the store's own methods (its records, then each history\n"
            "from its head). A repair is saved as the store saves a rewritten history, with the\n"
            "revision read: the old history stays as a branch. See docs/conversation-store.md.",
        ),
    )
    _add_run_options(parser)
    parser.add_argument("--scope", metavar="S", help=SCOPE_HELP)
    if command == "scan":
        parser.add_argument(
            "--branches", action="store_true", help="also scan every branch a conversation's record lists"
        )
        _add_upgrade_options(parser)
        parser.add_argument("--dask", metavar="ADDRESS", help=argparse.SUPPRESS)
    else:
        parser.add_argument("--write", action="store_true", help="save the repairs (needs --backup)")
        parser.add_argument(
            "--backup",
            metavar="FILE",
            help="a new journal of each conversation rewritten and the entry it left (restore's input)",
        )
        parser.add_argument(
            "--resume", action="store_true", help="continue the run recorded in --backup after its last key"
        )
        parser.set_defaults(usage=_repair_usage)
    parser.set_defaults(run=run_conversation_command, parser=parser)
    return parser


def _repair_usage(args: argparse.Namespace) -> None:
    from .store_commands import write_usage

    write_usage(args, "FILE: the journal restore and --resume read")


def run_conversation_command(args: argparse.Namespace) -> int:
    """``histfix scan|repair|restore ... py:MODULE:ATTR ...``, its usage checked."""
    from .store_commands import DEFAULT_LOCK_TIMEOUT

    command = args.command
    if command == "scan":
        if args.dask is not None:
            return fail("--dask reads the store on the cluster's workers; a ConversationStore is read here")
        if args.against is not None and (args.jobs is not None or args.include_pending):
            return fail("--jobs and --include-pending do not apply with --against")
        if args.against is None and (args.find_links is not None or args.cache_dir is not None):
            return fail("--find-links and --cache-dir only apply with --against")
    if not args.source.startswith(PY_PREFIX):
        return fail(f"{args.source}: a ConversationStore is named py:MODULE.PATH:ATTR")
    if getattr(args, "lock_timeout", DEFAULT_LOCK_TIMEOUT) != DEFAULT_LOCK_TIMEOUT:
        return fail(
            "--lock-timeout applies to SQLite and PostgreSQL tables; a ConversationStore waits as its backend does"
        )
    from ..store import StoreError

    _quiet_driver_logs()
    try:
        if command == "restore":
            return _restore(args)
        if command == "scan" and args.against is not None:
            return _against(args)
        return _run(args, write=command == "repair" and args.write, report=command == "repair")
    except StoreError as exc:
        return fail(str(exc))


def _quiet_driver_logs() -> None:
    from .store_commands import _quiet_driver_logs as quiet

    quiet()


def _open(args: argparse.Namespace, *, readers: int = 1) -> ConversationSource:
    """The ConversationSource the arguments name; StoreError/TypeError in one line if it cannot be."""
    from ..store.sources._conversation import ConversationSource

    return ConversationSource(
        args.source,
        scope=getattr(args, "scope", None),
        branches=getattr(args, "branches", False),
        readers=readers,
    )


def _run(args: argparse.Namespace, *, write: bool, report: bool) -> int:
    import time
    from pathlib import Path

    from ..store._conversation_journal import Journal
    from ..store._conversation_repair import repair_conversations
    from ..store._record import Options
    from ..store._runner import default_jobs
    from ..store._summary import Summary
    from .store_commands import _emit, _print_summary, _Progress

    summary = Summary()
    started = time.perf_counter()
    jobs = args.jobs or default_jobs()
    try:
        provider_name(args.provider)
        source = _open(args, readers=jobs)
    except (ValueError, TypeError, InputError) as exc:
        return fail(str(exc))
    journal: Journal | None = None
    progress: _Progress | None = None
    result: RepairResult | None = None
    try:
        with source:
            after = None
            if write:
                journal = Journal(Path(args.backup), "repair", source.url, resume=args.resume)
                after = journal.last_committed
            progress = _Progress(lambda: source.count(after=after))
            bar = progress

            def on_record(record: Record) -> None:
                bar.step()
                _emit(record, summary, args.jsonl, report)

            options = Options(provider=args.provider, include_pending=args.include_pending)
            result = repair_conversations(
                source,
                options,
                journal=journal,
                jobs=jobs,
                batch_size=args.batch_size,
                after=after,
                on_record=on_record,
            )
    except ValueError as exc:  # StoreError too
        return fail(f"{exc}{_resume_hint(journal)}")
    except KeyboardInterrupt:
        print(f"histfix: interrupted{_resume_hint(journal)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if progress is not None:
            progress.close()
        if journal is not None:
            journal.close()
    if not args.jsonl:
        _print_summary(summary, source.url, time.perf_counter() - started, args.provider, 0)
    return _finish(args, summary, result, write=write)


def _finish(args: argparse.Namespace, summary: Summary, result: RepairResult | None, *, write: bool) -> int:
    """What a scan or repair found and saved, after its summary; the exit status."""
    if not write:
        if summary.would_change and not args.jsonl:
            how = "histfix repair py:... --write --backup FILE"
            print(f"dry run: {summary.would_change:,} conversations would be repaired ({how})")
        return EXIT_FOUND if summary.would_change else EXIT_OK
    assert result is not None
    for key, reason in result.skipped:
        print(f"histfix: {key}: not saved: {reason}", file=sys.stderr)
    if not args.jsonl:
        if result.written:
            print(
                f"repaired {result.written:,} conversations; each one's old history stays in the store "
                f"as a branch (histfix restore {args.backup} {args.source} switches back)"
            )
        else:
            print("nothing to repair: every conversation is already as repair leaves it")
    return EXIT_FOUND if result.skipped else EXIT_OK


def _resume_hint(journal: Journal | None) -> str:
    if journal is None:
        return ""
    if journal.last_committed is None:
        return "; no batch committed yet, --resume starts over (nothing is saved twice)"
    return f"; saved through {journal.last_committed!r}, --resume continues after it"


def _against(args: argparse.Namespace) -> int:
    from .upgrade import run_upgrade_scan

    try:
        provider_name(args.provider)
        source = _open(args)
    except (ValueError, TypeError, InputError) as exc:
        return fail(str(exc))
    return run_upgrade_scan(args, source=source)


def _restore(args: argparse.Namespace) -> int:
    from ..store._conversation_repair import restore_conversations

    try:
        with _open(args) as source:
            result = restore_conversations(args.backup, source)
    except (ValueError, TypeError) as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        print(
            "histfix: interrupted; run restore again to finish (restored ones are skipped)", file=sys.stderr
        )
        return EXIT_INTERRUPTED
    for key, reason in result.skipped:
        print(f"histfix: {key}: not restored: {reason}", file=sys.stderr)
    already = f" ({result.already:,} already had it)" if result.already else ""
    print(f"branched {result.restored:,} conversations back to their history before the repair{already}")
    return EXIT_FOUND if result.skipped else EXIT_OK


# --- migrate --------------------------------------------------------------------------------------


def _migrate(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from ..store import open_source
    from ..store._conversation_journal import Journal
    from ..store._migrate import migrate
    from ..store._runner import default_jobs

    if args.resume and not args.journal:
        args.parser.error("--resume needs the --journal of the run to continue")
    if (args.resume or args.verify or args.journal) and not args.write:
        args.parser.error("--journal, --resume and --verify go with --write")
    if not args.target.startswith(PY_PREFIX):
        return fail(f"{args.target}: a ConversationStore is named py:MODULE.PATH:ATTR")
    _quiet_driver_logs()
    started = time.perf_counter()
    journal: Journal | None = None
    result: MigrateResult | None = None
    try:
        provider_name(args.provider)
        with _open_target(args.target) as target, open_source(args.source) as source:
            after = None
            if args.journal:
                journal = Journal(Path(args.journal), "migrate", target.url, resume=args.resume)
                after = journal.last_committed

            def on_history(migration: Migration, outcome: str) -> None:
                if outcome == "not_loaded":
                    print(f"histfix: {migration.key}: not moved: {migration.error}", file=sys.stderr)
                elif outcome == "existing":
                    print(
                        f"histfix: {migration.key}: the store already has a conversation with this id "
                        "and another history: left as it is",
                        file=sys.stderr,
                    )
                elif outcome in ("failed", "mismatched"):
                    print(f"histfix: {migration.key}: {outcome}, see the summary", file=sys.stderr)

            result = migrate(
                source,
                target,
                write=args.write,
                scope=args.scope,
                scope_field=args.scope_field,
                provider=args.provider,
                include_pending=args.include_pending,
                journal=journal,
                verify=args.verify,
                jobs=args.jobs or default_jobs(),
                batch_size=args.batch_size,
                after=after,
                on_history=on_history,
            )
    except (ValueError, TypeError, InputError) as exc:  # StoreError too
        return fail(f"{exc}{_resume_hint(journal)}")
    except KeyboardInterrupt:
        print(f"histfix: interrupted{_resume_hint(journal)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if journal is not None:
            journal.close()
    _print_migration(result, args, time.perf_counter() - started)
    return EXIT_OK if result.complete else EXIT_FOUND


def _open_target(target: str) -> ConversationSource:
    from ..store.sources._conversation import ConversationSource

    return ConversationSource(target)


def _print_migration(result: MigrateResult, args: argparse.Namespace, seconds: float) -> None:
    rate = result.total / seconds if seconds > 0 else 0.0
    verb = "migrated" if args.write else "would migrate"
    print(f"{result.total:,} histories in {args.source} ({seconds:.1f} s, {rate:,.0f}/s)")
    print(
        f"  {verb}: {result.migrated:,} into {args.target} "
        f"(repaired {result.repaired:,}; left as they are, resumable: {result.pending:,})"
    )
    if result.already:
        print(f"  already there with this very history: {result.already:,}")
    print(f"  skipped as existing: {len(result.existing):,}")
    print(f"  not loadable: {len(result.not_loaded):,}")
    for key, why in result.not_loaded[:10]:
        print(f"    {key}: {why}")
    if len(result.not_loaded) > 10:
        print(f"    ... and {len(result.not_loaded) - 10:,} more (each named on stderr)")
    if result.failed:
        print(f"  the store failed: {len(result.failed):,}")
        for key, why in result.failed[:10]:
            print(f"    {key}: {why}")
    if args.verify:
        print(f"  verified: {result.migrated - len(result.mismatched):,} load back as saved")
        for key, how in result.mismatched:
            print(f"    {key}: {how}")
    if not args.write and result.migrated:
        print("dry run: nothing saved (--write saves them)")
