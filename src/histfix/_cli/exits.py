"""The exit statuses of ``histfix``: each code once, with what it means.

Every command returns one of these; docs/cli.md's table of exit statuses is generated from
:data:`MEANINGS` (and a docs test fails when it drifts). The signal statuses are 128 + the
signal's number, what a shell shows for a tool the signal ended, as ``cat`` or ``grep`` end there.
"""

from __future__ import annotations

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_FOUND",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "MEANINGS",
]

EXIT_OK = 0
EXIT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 128 + 2  # SIGINT
EXIT_BROKEN_PIPE = 128 + 13  # SIGPIPE
EXIT_TERMINATED = 128 + 15  # SIGTERM

#: What each exit status means, in the order of the codes.
MEANINGS: dict[int, str] = {
    EXIT_OK: "done, and nothing found that needs you",
    EXIT_FOUND: (
        "done, and something needs you: `check` found a problem some provider rejects (with "
        "`--provider`: that one); `scan` or a dry-run `repair` of a store found a history repair "
        "would change; `scan --against` found one that would break; `repair --write`, `restore` "
        "or `migrate` left a history as it was (each named on stderr)"
    ),
    EXIT_BAD_INPUT: (
        "bad input, one line on stderr: a usage error, a file or store that cannot be read or "
        "written, a bad `--provider` or `HISTFIX_BACKEND`, a release `compare` or `scan --against` "
        "could not check; nothing half-written"
    ),
    EXIT_INTERRUPTED: "stopped by Ctrl-C (SIGINT), without a traceback, nothing half-written",
    EXIT_BROKEN_PIPE: "standard output closed by its reader (piped into `head`, say): stopped quietly",
    EXIT_TERMINATED: "stopped by SIGTERM, as by Ctrl-C",
}
