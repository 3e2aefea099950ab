"""Test histfix against every pinned pydantic-ai-slim release, offline (no provider is ever called).

`nox` runs the whole suite: one `tests` session per pinned release, `lint`, `typecheck`, and
`compat_matrix`, which rebuilds compat-matrix.md from the measured results and fails when the
committed file differs. `nox -s bench` runs the benchmark (not part of the default run).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nox
from packaging.version import Version

# The one pinned list: every behaviour boundary in shared/spec/upstream-behaviour.md, and the newest.
PYDANTIC_AI_RELEASES = [
    "1.0.0",  # first 1.x; no _clean_message_history at all
    "1.0.7",  # _clean_message_history (merge only) appears
    "1.67.0",  # ToolReturnPart.outcome appears, without a neutral value
    "1.95.0",  # tool_kind and Native* parts appear
    "1.107.10",  # newest 1.x
    "2.0.0",  # ModelRequest.state; history_processors= rejected
    "2.9.1",  # last release that repairs nothing
    "2.10.0",  # internal repair before each request; outcome='interrupted'
    "2.52.0",  # last release without public repair_messages
    "2.53.0",  # public repair_messages (dict matching, not idempotent on duplicate ids)
    "2.55.0",  # FIFO matching of duplicate ids
    "2.59.0",  # parts between results moved; last release histfix's own walk runs by default
    "2.60.0",  # repair_messages matches the newest behaviour: histfix delegates from here
    "2.68.0",  # newest release measured
]
NEWEST = PYDANTIC_AI_RELEASES[-1]

ROOT = Path(__file__).parent
RESULTS = ROOT / ".nox" / "_results"

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["tests", "lint", "typecheck", "compat_matrix"]


def release_pins(release: str) -> list[str]:
    """Extra requirements an old release needs to import with today's dependencies."""
    version = Version(release)
    pins = []
    if version < Version("1.32.0"):
        # 1.0.0-1.31.0 import opentelemetry._events, which opentelemetry-api 1.44.0 removed and
        # 1.39.0-1.43.0 deprecate (warning at import); 1.38.0 is the last quiet release.
        # Measured on all 223 releases 1.0.0-2.68.0: no other release needs any pin.
        pins.append("opentelemetry-api<1.39")
    return pins


def install_release(session: nox.Session, release: str, *extra: str) -> None:
    session.install("-e", ".", f"pydantic-ai-slim=={release}", *release_pins(release), *extra)


@nox.session
@nox.parametrize("pydantic_ai", PYDANTIC_AI_RELEASES, ids=PYDANTIC_AI_RELEASES)
def tests(session: nox.Session, pydantic_ai: str) -> None:
    """The whole pytest suite on one pinned release."""
    install_release(session, pydantic_ai, "pytest")
    RESULTS.mkdir(parents=True, exist_ok=True)
    report = RESULTS / f"{pydantic_ai}.json"
    report.unlink(missing_ok=True)
    session.run("python", "-m", "pytest", f"--record-outcome={report}", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on src/ against the newest pinned release."""
    install_release(session, NEWEST, "mypy")
    session.run("mypy")


@nox.session(python=False)
def compat_matrix(session: nox.Session) -> None:
    """Rebuild compat-matrix.md from the measured runs; fail if the committed copy differs.

    Pass `-- --write` to update the file instead of checking it.
    """
    mode = "--write" if "--write" in session.posargs else "--check"
    session.run(sys.executable, "tests/matrix_report.py", mode, str(RESULTS), *PYDANTIC_AI_RELEASES)


@nox.session
def bench(session: nox.Session) -> None:
    """Time our walk against upstream repair_messages on the newest release (not a test)."""
    install_release(session, NEWEST)
    session.run("python", "tests/bench_repair.py", *session.posargs)
