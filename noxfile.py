"""Test histfix against every pinned pydantic-ai-slim release, offline (no provider is ever called).

`nox` runs the default sessions: `wheelhouse` (downloads every wheel the others install, once; a
no-op while it is up to date), then side by side, one per CPU at a time (nox's `--parallel`: see
nox.options.parallel below), one `tests` session per pinned release, `tools` (the
release-independent tests: the programs in tools/, the provider emulators' selftests,
tests/compare/ (`histfix compare`, its environments both real and on stand-ins for uv),
tests/upgrade/test_across_releases.py (`histfix scan --against` in environments of their own, every
store kind included) and tests/test_processes.py (histfix in fresh processes), run once, on the newest, and left out of every `tests` session), `stores` (tests/store:
the store commands on real directories, JSONL, SQLite, a PostgreSQL server and (on the newest) a
Dask LocalCluster the tests start, on the newest and the oldest release only, and left out of every
`tests` session), `lint`, `typecheck` and
`docs` (the documentation site, built with `mkdocs build --strict`), and last `compat_matrix`, which
rebuilds compat-matrix.md from the measured results and fails when the committed file differs. Once
the wheelhouse is built, every session installs from it alone
(`--no-index`), so `unshare -rn python3 -m nox` passes with networking switched off.

Opt-in sessions: `pythons` (the suite under every Python 3.10-3.13 it finds: see there), `sweep`
(the suite on every release on PyPI, resumable), `latest` (canary: the differential suite on the
newest release, unpinned), `compare -- FILE [--json]` (what each pinned release does with a stored
history), `bench` (the benchmark), `mutation` (cosmic-ray over the release switches, the backend
selector and the profile registry: docs/contributing/mutation.md). They run by themselves, their output as it comes (none of them
allows parallel runs, so nox says it ignores --parallel and runs them sequentially).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import nox
import nox.command
import nox.project
from nox.virtualenv import UV  # the uv nox itself uses (PATH, or the `uv` package beside nox)
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

# The one pinned list lives in the package (histfix compare --pinned uses it too), loaded from the
# source tree so that the noxfile needs nothing but packaging: every behaviour boundary, and the
# newest release measured. It imports nothing outside histfix's lazy __init__ and its _release package.
sys.path.insert(0, str(Path(__file__).parent / "src"))
try:
    from histfix._release import pinned as _releases
finally:
    sys.path.pop(0)
PYDANTIC_AI_RELEASES: list[str] = _releases.PINNED_RELEASES
NEWEST: str = _releases.NEWEST
release_pins = _releases.release_pins
release_requirements = _releases.release_requirements
#: The Pythons pyproject.toml claims, for the opt-in `pythons` session.
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
#: Extra (Python, release) runs of `pythons`: the newest 1.x on the oldest Python.
PYTHONS_EXTRA = [("3.10", "1.107.10")]

# What each kind of session installs besides histfix and pydantic-ai (the wheelhouse holds these).
#: pyyaml: tests/tools/test_calibrate.py writes and tools/calibrate.py reads VCR cassettes.
TEST_TOOLS = ["pytest", "pytest-xdist", "hypothesis", "pyyaml"]
#: What `stores` adds: pytest-postgresql runs the real PostgreSQL server its tests use.
STORE_TEST_TOOLS = ["pytest-postgresql"]
#: The histfix extras `stores` installs: the PostgreSQL source's psycopg, and tqdm for the store
#: commands' progress bar, which tests/store checks.
STORE_EXTRAS = ["postgres", "progress"]
#: The releases `stores` runs on: the newest and the oldest pinned.
STORE_RELEASES = [NEWEST, PYDANTIC_AI_RELEASES[0]]
#: What `stores` on the newest release adds, and `typecheck` checks: the Dask scan's extra
#: (tests/store/test_dask.py runs it on a real LocalCluster; it skips without it). The work each
#: Dask task runs is the local scan's record, which `stores` tests on both releases.
DASK_EXTRA = "dask"


#: What `typecheck` installs: every store extra, so mypy checks the modules that import them.
TYPECHECK_EXTRAS = [*STORE_EXTRAS, DASK_EXTRA]


def store_extras(release: str) -> list[str]:
    """The histfix extras `stores` installs on ``release``."""
    return [*STORE_EXTRAS, DASK_EXTRA] if release == NEWEST else list(STORE_EXTRAS)


LINT_TOOLS = ["ruff"]
TYPECHECK_TOOLS = ["mypy"]
#: mkdocs-material and mkdocstrings, which reads src/ without importing it (so no pydantic-ai);
#: ruff lets mkdocstrings format the signatures it renders.
DOCS_TOOLS = ["mkdocs-material", "mkdocstrings[python]", "ruff"]
#: The opt-in `mutation` session's tool (installed from the package index: not in the wheelhouse).
MUTATION_TOOLS = ["cosmic-ray>=8.7,<9"]
#: The pydantic-ai-slim extras `tests` installs, so tests/profiles/test_provider_truth.py drives each
#: release's own model classes and SDKs against the loopback emulators in tests/support/emulators/.
#: groq and huggingface: model classes of their own that speak Chat Completions
#: (tests/profiles/test_provider_prefixes.py proves their profile through them).
PROVIDER_EXTRAS = ["openai", "anthropic", "google", "bedrock", "mistral", "groq", "huggingface"]

ROOT = Path(__file__).parent
RESULTS = ROOT / ".nox" / "_results"
WHEELHOUSE = ROOT / "wheelhouse"
#: What the wheelhouse was built for; written last, so a half-built wheelhouse is never used.
WHEELHOUSE_STAMP = WHEELHOUSE / "inputs.json"
#: The measured sweep over every release (committed: compat-matrix.md is rendered from it).
SWEEP_RECORD = ROOT / "tests" / "data" / "sweep.json"
#: `nox -s sweep -- --providers`: the provider tests alone on every release (tools/sweep.py).
SWEEP_PROVIDERS_RECORD = ROOT / "tests" / "data" / "sweep-providers.json"

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
# Bytecode caches are what make a warm run warm: a session imports pydantic-ai and five provider
# SDKs, and compiling them anew every run costs seconds per session. Some machines export
# PYTHONDONTWRITEBYTECODE; the sessions (and the .pyc files they leave in the venvs) ignore it.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
#: nox's own parallel scheduler (`--parallel`, from 2026.8; `Session.parallel`, which the sessions
#: below read, from 2026.10.20, hence needs_version) runs each session in its own nox
#: process, one per CPU at a time: `tests(X)`, `tools`, `lint` and `typecheck` side by side
#: (allow_parallel), `wheelhouse` alone before them and `compat_matrix` alone after them (sessions
#: that don't allow parallel runs start only when nothing else runs, in the order below). Each
#: session's output is printed whole when it ends. `nox -j 1` runs them one after another.
nox.needs_version = ">=2026.10.20"
nox.options.parallel = "auto"
# In this order, the longest first (`stores` on the newest, then `tools`, then the `tests` sessions
# longest first: LONGEST_FIRST), so that the run does not end on one long session with a core idle.
# (`stores` on the oldest started among the first: one clean-clone run of 13 min 14 s, against
# 12 min 11 s this way.)
nox.options.sessions = [
    "wheelhouse",
    f"stores({NEWEST})",
    "tools",
    "tests",
    f"stores({PYDANTIC_AI_RELEASES[0]})",
    "lint",
    "typecheck",
    "docs",
    "compat_matrix",
]
#: pytest-xdist inside a tests(X) session run by itself (`nox -j 1 -s "tests(X)"`): one worker per
#: CPU (PYTEST_XDIST_AUTO_NUM_WORKERS overrides). Under the parallel scheduler (the default run)
#: every session runs pytest serially instead (SERIAL): each xdist worker imports pydantic-ai, its
#: model classes and five provider SDKs again (measured on `tests(2.9.1)`, 2 cores: 41.6 s wall and
#: 38 s of CPU serially, 34.9 s wall and 60 s of CPU on two workers), while a second serial session
#: beside it does useful work with that core (`tests(2.9.1)` and `tests(2.10.0)`: 83 s one after
#: the other on xdist, 52 s side by side serially). loadgroup hands out tests one at a
#: time (so both cores stay busy around the long fuzz test) except the `uses_sdk` tests, which go
#: to one worker per provider SDK (tests/conftest.py): each worker that sends through an SDK pays
#: about a second to import it and pydantic-ai's model class, and with worksteal both workers
#: imported all five. The controller writes the --record-outcome record (tests/conftest.py),
#: identical to a serial run's.
PARALLEL = ["-n", "auto", "--dist", "loadgroup"]
SERIAL = ["-n", "0"]
#: Release-independent tests: the tools/ programs' and the provider emulators' selftests (which
#: speak raw HTTP and the newest SDKs), tests/test_processes.py (histfix in fresh processes),
#: tests/compare/ (`histfix compare` building its own environments of four releases, and their
#: cache, probe process and outcomes on plain data) and tests/upgrade/test_across_releases.py (the
#: upgrade check against releases in environments of their own): `tools` runs them once
#: and `tests(X)` skips them. A test belongs here only if no assertion in it depends on the installed release.
RELEASE_INDEPENDENT_TESTS = [
    "tests/tools",
    "tests/test_emulators.py",
    "tests/test_processes.py",
    "tests/compare",
    "tests/upgrade/test_across_releases.py",
]
#: The store tests: `stores` runs them on STORE_RELEASES, and `tests(X)` skips them (they start a
#: PostgreSQL server and need the postgres extra, and what they test differs little between releases).
STORE_TESTS = "tests/store"
#: What every per-release run of the suite (`tests`, `pythons`) leaves out: the tests `tools` and
#: `stores` run instead.
NOT_PER_RELEASE = [f"--ignore={path}" for path in [*RELEASE_INDEPENDENT_TESTS, STORE_TESTS]]
#: pytest-xdist in `tools`: by file, since the compare tests share one environment cache (two
#: workers building the same release at once would race) and each SDK selftest file imports its SDKs.
TOOLS_PARALLEL = ["-n", "auto", "--dist", "loadfile"]


def provider_pins(release: str) -> list[str]:
    """Provider SDK pins an old release needs to reach the emulators with today's SDKs.

    Each measured: an import of the model class plus one request to tests/support/emulators on the pinned
    releases named; boundaries between them from the releases' own requirements. (Beside
    `release_pins`, which lives in src/histfix/_release/pinned.py, because only the `tests` sessions and
    the sweep install the SDKs.)
    """
    version = Version(release)
    pins = []
    if version < Version("1.24.0"):
        # 1.0.0-1.23.x work with anthropic 0.74 (measured on 1.0.0 and 1.0.7; they allow >=0.70).
        pins.append("anthropic<0.75")
    elif version < Version("1.61.0"):
        # 1.24.0 requires anthropic>=0.75 (1.56.0: >=0.78) but still imports
        # anthropic.types.beta.beta_web_search_tool_20250305_param.UserLocation, which anthropic
        # 0.80.0 removed (read in the wheels of 1.24.0-1.60.0 and anthropic 0.74.1-0.80.0).
        pins.append("anthropic<0.80")
    elif version < Version("2.33.0"):
        # 1.61.0 requires anthropic>=0.80 and imports BetaUserLocationParam instead.
        # 1.67.0-2.32.x break on anthropic 2.x (BetaMessageParam is a Union; measured on 1.67.0,
        # 1.95.0, 2.0.0, 2.9.1, 2.10.0, 2.31.0) and 1.x (AsyncMessages.create() keyword; 1.67.0,
        # 2.9.1, 2.31.0); anthropic<1 works (1.107.10 caps it itself); 2.33.0 requires >=1.
        pins.append("anthropic<1")
    elif version < Version("2.60.0"):
        # 2.33.0 requires anthropic>=1; anthropic 2.x fails every request ("Cannot instantiate
        # typing.Union"): measured on 2.52.0, 2.53.0, 2.55.0, 2.59.0; 2.60.0 and 2.68.0 work unpinned.
        pins.append("anthropic<2")
    if version < Version("1.76.0"):
        # mistralai 2.x moved the client: 1.67.0 fails to import it (measured); 1.76.0 requires >=2.
        pins.append("mistralai<2")
    if version < Version("1.62.0"):
        # 1.0.0-1.61.x's models/huggingface.py imports aiohttp, which huggingface-hub 0.x's
        # `inference` extra brings; 1.30.0-1.61.x cap the hub <1.0 themselves, but earlier releases
        # do not, and resolve to a hub without that extra (no aiohttp: the model class fails to
        # import; measured on 1.0.0). 1.62.0 requires huggingface-hub>=1.3.4 and no aiohttp.
        pins.append("huggingface-hub[inference]<1")
    if Version("2.32.0") <= version < Version("2.63.0"):
        # models/mistral.py imports httpx.Timeout, but httpx stopped being a dependency in 2.32.0
        # (httpx2 instead) and mistralai 3 needs only httpx2: measured on 2.52.0-2.60.0; 2.63.0 drops it.
        pins.append("httpx")
    return pins


def test_requirements(release: str, *extra: str) -> list[str]:
    """What a `tests` session (and each sweep run) installs: the release with the provider SDK
    extras (a release lacking one only warns), its pins, the SDK pins, and `extra`."""
    return [
        f"pydantic-ai-slim[{','.join(PROVIDER_EXTRAS)}]=={release}",
        *release_pins(release),
        *provider_pins(release),
        *extra,
    ]


# --- the wheelhouse ---------------------------------------------------------------------------------


def requirement_sets() -> dict[str, list[str]]:
    """Everything a default, `bench` or `compare` session installs, by session: the wheelhouse's input.

    histfix is installed editable, so its dependencies and its build backend are listed instead.
    `bench` and `compare` install subsets of the `tests` sets.
    """
    pyproject = nox.project.load_toml(ROOT / "pyproject.toml")
    project = list(pyproject["project"]["dependencies"])
    sets = {f"tests-{r}": [*project, *test_requirements(r, *TEST_TOOLS)] for r in PYDANTIC_AI_RELEASES}
    optional = pyproject["project"]["optional-dependencies"]
    extras = [r for name in STORE_EXTRAS for r in optional[name]]
    for release in STORE_RELEASES:
        with_extras = [r for name in store_extras(release) for r in optional[name]]
        sets[f"stores-{release}"] = [*project, *with_extras, *store_requirements(release)]
    sets["tools"] = [*project, *extras, *test_requirements(NEWEST, *TEST_TOOLS, *STORE_TEST_TOOLS)]
    typed = [r for name in TYPECHECK_EXTRAS for r in optional[name]]
    sets["typecheck"] = [*project, *typed, *release_requirements(NEWEST, *TYPECHECK_TOOLS)]
    sets["lint"] = list(LINT_TOOLS)
    sets["docs"] = list(DOCS_TOOLS)
    # `-e .` builds with the backend, which asks for `editables` too (get_requires_for_build_editable).
    sets["build"] = [*pyproject["build-system"]["requires"], "editables"]
    return sets


def wheelhouse_inputs() -> str:
    """The stamp a wheelhouse built for the current requirement sets and interpreter carries."""
    target = {
        "python": f"{sys.implementation.name}{sys.version_info.major}.{sys.version_info.minor}",
        "platform": f"{sys.platform}-{platform.machine()}",
        "sets": requirement_sets(),
    }
    return json.dumps(target, indent=1, sort_keys=True) + "\n"


def wheelhouse_ready() -> bool:
    """True when the wheelhouse holds every wheel the current pinned matrix needs."""
    return WHEELHOUSE_STAMP.exists() and WHEELHOUSE_STAMP.read_text() == wheelhouse_inputs()


#: Write bytecode at install time: with PYTHONDONTWRITEBYTECODE set (as on the CI machine) every
#: run would otherwise recompile each imported module; the provider SDKs alone cost about 15 s a
#: release that way (measured on 2.55.0: test_provider_truth 35 s -> 18 s once compiled).
INSTALL_ENV = {"UV_COMPILE_BYTECODE": "1"}


#: In each session's venv: what the last install put there (see `install`).
INSTALLED_STAMP = ".histfix-installed.json"


def install(session: nox.Session, *args: str) -> None:
    """`session.install`, from the wheelhouse alone when it is built (no network), else from the index.

    Skipped when the reused venv already holds exactly this install: the same arguments, the same
    wheelhouse and the same pyproject.toml (histfix is editable, so source changes need nothing).
    `uv pip install` would find everything satisfied, but it still rebuilds the editable histfix:
    about 1.5 s a session, 16 times a `nox` run. `--reuse-venv=no` (or deleting .nox/) starts over.
    """
    offline = wheelhouse_ready()
    where = ["--no-index", "--find-links", str(WHEELHOUSE)] if offline else []
    inputs = {
        "install": [*where, *args],
        "wheelhouse": WHEELHOUSE_STAMP.read_text() if offline else None,
        "pyproject": (ROOT / "pyproject.toml").read_text(),
    }
    wanted = json.dumps(inputs, indent=1, sort_keys=True) + "\n"
    stamp = Path(session.virtualenv.location) / INSTALLED_STAMP
    if stamp.exists() and stamp.read_text() == wanted:
        session.log(f"{stamp.parent.name} already holds this install (same requirements): not reinstalling")
        return
    stamp.unlink(missing_ok=True)
    if not offline:
        session.log("wheelhouse missing or stale (run `nox -s wheelhouse`): installing from the index")
    session.install(*where, *args, env=INSTALL_ENV)
    if not session._runner.global_config.no_install:  # `nox --no-install` installed nothing
        stamp.write_text(wanted)


def install_release(session: nox.Session, release: str, *extra: str) -> None:
    install(session, "-e", ".", *release_requirements(release, *extra))


Pin = tuple[str, Version]


def _lock_one(session: nox.Session, name: str, requirements: list[str]) -> set[Pin]:
    """Resolve one requirement set with uv (for this interpreter) into (name, version) pins."""
    folder = WHEELHOUSE / "requirements"
    folder.mkdir(parents=True, exist_ok=True)
    source, locked = folder / f"{name}.in", folder / f"{name}.txt"
    source.write_text("\n".join(requirements) + "\n")
    compile_ = [UV, "pip", "compile", "--quiet", "--no-header", "--no-annotate", "--python", sys.executable]
    session.run(*compile_, str(source), "-o", str(locked), external=True)
    lines = [line.split("==") for line in locked.read_text().splitlines() if "==" in line]
    return {(canonicalize_name(n), Version(v)) for n, v in lines}


def download_batches(lock: set[Pin]) -> list[list[str]]:
    """The lock as `name==version` batches naming each package at most once.

    `pip download` refuses two versions of one package in a single call, and the pinned releases
    do need several (opentelemetry-api, pydantic-graph…).
    """
    versions: dict[str, list[Version]] = {}
    for name, version in sorted(lock):
        versions.setdefault(name, []).append(version)
    depth = max((len(v) for v in versions.values()), default=0)
    return [[f"{n}=={v[i]}" for n, v in versions.items() if i < len(v)] for i in range(depth)]


def _prune_wheelhouse(lock: set[Pin]) -> None:
    """Remove wheels no requirement set pins any more, so offline resolution sees only the lock."""
    for wheel in WHEELHOUSE.glob("*.whl"):
        name, version, *_ = parse_wheel_filename(wheel.name)
        if (name, version) not in lock:
            wheel.unlink()


@nox.session(python=False)
def wheelhouse(session: nox.Session) -> None:
    """Download every wheel the other sessions install into wheelhouse/: the only step needing a network.

    A no-op while the wheelhouse matches the pinned list and this interpreter, so it runs first in
    the default `nox` run: a clean machine builds it once, and every later session (and every later
    `nox`, even under `unshare -rn`) installs from it. `-- --refresh` re-resolves to the newest
    dependencies.
    """
    if wheelhouse_ready() and "--refresh" not in session.posargs:
        session.log(f"wheelhouse up to date: {len(list(WHEELHOUSE.glob('*.whl')))} wheels in {WHEELHOUSE}")
        return
    WHEELHOUSE_STAMP.unlink(missing_ok=True)
    lock: set[Pin] = set()
    for name, requirements in requirement_sets().items():
        lock |= _lock_one(session, name, requirements)
    (WHEELHOUSE / "lock.txt").write_text("".join(f"{n}=={v}\n" for n, v in sorted(lock)))
    download = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
    for batch in download_batches(lock):
        session.run(*download, "--dest", str(WHEELHOUSE), *batch)
    _prune_wheelhouse(lock)
    WHEELHOUSE_STAMP.write_text(wheelhouse_inputs())
    session.log(f"wheelhouse built: {len(lock)} wheels for {len(requirement_sets())} requirement sets")


# --- the pinned matrix ------------------------------------------------------------------------------


#: The `tests(X)` sessions longest first, so the parallel run never ends on a long one with a core
#: idle: the newest and the oldest draw every generated history and send every provider case,
#: 2.60.0 runs the full fuzz set, 2.68.0 the most of the rest (measured 2026-12-07 on 2 cores:
#: 2 min, 1 min, 55 s and 1 min, against 35-46 s for the others), then the rest in pinned order.
LONGEST_FIRST = [
    release
    for release in (NEWEST, PYDANTIC_AI_RELEASES[0], "2.60.0", "2.68.0")
    if release in PYDANTIC_AI_RELEASES
]
LONGEST_FIRST += [release for release in PYDANTIC_AI_RELEASES if release not in LONGEST_FIRST]


@nox.session(allow_parallel=True)
@nox.parametrize("pydantic_ai", LONGEST_FIRST, ids=LONGEST_FIRST)
def tests(session: nox.Session, pydantic_ai: str) -> None:
    """The pytest suite on one pinned release (all but the tools' and the store tests: see `tools`, `stores`)."""
    install(session, "-e", ".", *test_requirements(pydantic_ai, *TEST_TOOLS))
    RESULTS.mkdir(parents=True, exist_ok=True)
    report = RESULTS / f"{pydantic_ai}.json"
    report.unlink(missing_ok=True)
    workers = SERIAL if session.parallel else PARALLEL
    pytest = ["python", "-m", "pytest", f"--record-outcome={report}", *NOT_PER_RELEASE, *workers]
    session.run(*pytest, *session.posargs)


@nox.session(allow_parallel=True)
def tools(session: nox.Session) -> None:
    """The release-independent tests (RELEASE_INDEPENDENT_TESTS), once, on the newest release."""
    # The store extras: tests/upgrade/test_across_releases.py checks `histfix scan --against` on every
    # store kind, PostgreSQL too.
    extras = f".[{','.join(STORE_EXTRAS)}]"
    install(session, "-e", extras, *test_requirements(NEWEST, *TEST_TOOLS, *STORE_TEST_TOOLS))
    workers = SERIAL if session.parallel else TOOLS_PARALLEL
    session.run("python", "-m", "pytest", *RELEASE_INDEPENDENT_TESTS, *workers, *session.posargs)


def store_requirements(release: str) -> list[str]:
    """What `stores` installs besides histfix with STORE_EXTRAS: the release, its pins, the tools."""
    return release_requirements(release, *TEST_TOOLS, *STORE_TEST_TOOLS)


@nox.session(allow_parallel=True)
@nox.parametrize("pydantic_ai", STORE_RELEASES, ids=STORE_RELEASES)
def stores(session: nox.Session, pydantic_ai: str) -> None:
    """tests/store on one release: every source, PostgreSQL included, through the API and the CLI.

    Needs PostgreSQL's server programs (Debian's `postgresql` package: .ci/run installs it); the
    tests start their own server in a temporary directory (tests/support/postgres_server.py).
    """
    install(session, "-e", f".[{','.join(store_extras(pydantic_ai))}]", *store_requirements(pydantic_ai))
    workers = SERIAL if session.parallel else PARALLEL
    session.run("python", "-m", "pytest", STORE_TESTS, *workers, *session.posargs)


@nox.session(allow_parallel=True)
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the whole repository."""
    install(session, *LINT_TOOLS)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(allow_parallel=True)
def typecheck(session: nox.Session) -> None:
    """mypy --strict on src/ against the newest pinned release (with psycopg and Dask, for the store's extras)."""
    install(
        session, "-e", f".[{','.join(TYPECHECK_EXTRAS)}]", *release_requirements(NEWEST, *TYPECHECK_TOOLS)
    )
    session.run("mypy")


@nox.session(allow_parallel=True)
def docs(session: nox.Session) -> None:
    """Build the documentation site (mkdocs.yml) with --strict into a temporary directory.

    A link to a missing page or anchor, a missing include, or a name mkdocstrings cannot render
    fails it. The examples on the pages are run by tests/test_docs.py in every `tests` session;
    `mkdocs serve` in this session's environment shows the site while you write.
    """
    install(session, *DOCS_TOOLS)
    site = Path(session.create_tmp()) / "site"
    # Material prints a notice about MkDocs 2.0 on every build; it says nothing about the docs.
    quiet = {"NO_MKDOCS_2_WARNING": "1"}
    session.run("mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site), env=quiet)


@nox.session(python=False)
def compat_matrix(session: nox.Session) -> None:
    """Rebuild compat-matrix.md from the measured runs; fail if the committed copy differs.

    The pinned table comes from this run's `tests` sessions, the every-release table from the
    committed sweep record. Pass `-- --write` to update the file instead of checking it.
    """
    mode = "--write" if "--write" in session.posargs else "--check"
    report = [sys.executable, "tools/matrix_report.py", mode, "--sweep", str(SWEEP_RECORD)]
    report += ["--sweep-providers", str(SWEEP_PROVIDERS_RECORD)]
    session.run(*report, str(RESULTS), *PYDANTIC_AI_RELEASES)


# --- opt-in sessions ---------------------------------------------------------------------------------


@nox.session(python=False)
def sweep(session: nox.Session) -> None:
    """The whole suite on every pydantic-ai-slim release >= 1.0.0 on PyPI (needs the network).

    Resumable: releases already recorded in tests/data/sweep.json for the same histfix source are
    skipped. `-- --fresh` starts over, `-- --jobs N` sets the parallel workers (default: CPUs),
    `-- --fuzz-examples N` the examples per fuzz property (default 100; the pinned matrix runs 500).
    `-- --providers` runs only the provider tests (every corpus case and `--generated N` generated
    histories to every API both ways) into tests/data/sweep-providers.json.
    Then rewrites compat-matrix.md (which needs the pinned results of a `nox` run).
    """
    session.notify("compat_matrix", ["--write"])  # queued first: it runs even when a release fails
    record = SWEEP_PROVIDERS_RECORD if "--providers" in session.posargs else SWEEP_RECORD
    session.run(sys.executable, "tools/sweep.py", "--uv", UV, "--record", str(record), *session.posargs)


#: Schema-drawn histories per release in `latest`'s report (about a minute of drawing and probing).
LATEST_EXAMPLES = 400


def latest_options(posargs: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """`nox -s latest -- [--pinned X] [--newest Y] [--examples N] [pytest args]`."""
    parser = argparse.ArgumentParser(prog="nox -s latest --", add_help=False)
    parser.add_argument(
        "--pinned", default=NEWEST, help="the release to compare with (default: the newest pinned)"
    )
    parser.add_argument("--newest", help="the release to watch (default: the newest on the index)")
    parser.add_argument("--examples", type=int, default=LATEST_EXAMPLES)
    return parser.parse_known_args(posargs)


@nox.session
def latest(session: nox.Session) -> None:
    """Canary: what the newest pydantic-ai-slim on the index changes, against the newest pinned (network).

    `tools/release_watch.py report` names the schema's new part kinds, fields, literal values and
    metadata keys, the walk against upstream (schema-drawn and corpus histories), upstream's repair
    changing between the two releases and `histfix.load_json` both ways; then the differential suite
    runs. Red on any difference. `-- --pinned 2.68.0 --newest 2.78.0` replays a past release.
    """
    options, pytest_args = latest_options(session.posargs)
    newest = [f"pydantic-ai-slim=={options.newest}", *release_pins(options.newest)] if options.newest else []
    session.install("--upgrade", "-e", ".", *(newest or ["pydantic-ai-slim"]), *TEST_TOOLS)
    code = "from importlib.metadata import version; print(version('pydantic-ai-slim'))"
    installed = (session.run("python", "-c", code, silent=True) or "").strip()
    session.log(f"watching pydantic-ai-slim {installed} against {options.pinned}")
    # The pinned release in an environment of its own beside the session's, from the wheelhouse when
    # it holds the release (as it does every pinned one), else from the index.
    pinned = Path(session.virtualenv.location).parent / f"latest-pinned-{options.pinned}"
    python = session.run("python", "-c", "import sys; print(sys.executable)", silent=True)
    session.run(
        UV, "venv", "--quiet", "--allow-existing", "--python", str(python).strip(), str(pinned), external=True
    )
    offline = (
        ["--find-links", str(WHEELHOUSE)]
        if (WHEELHOUSE / f"pydantic_ai_slim-{options.pinned}-py3-none-any.whl").exists()
        else []
    )
    requirements = release_requirements(options.pinned, *TEST_TOOLS)
    pinned_python = str(pinned / "bin" / "python")
    install_pinned = [
        UV,
        "pip",
        "install",
        "--quiet",
        "--python",
        pinned_python,
        *offline,
        "-e",
        ".",
        *requirements,
    ]
    session.run(*install_pinned, external=True, env=INSTALL_ENV)
    verdict = Path(session.create_tmp()) / "release-watch"
    report = ["python", "tools/release_watch.py", "report", "--pinned-python", pinned_python]
    session.run(*report, "--examples", str(options.examples), "--workdir", str(verdict), success_codes=[0, 1])
    session.run("python", "-m", "pytest", "-rf", "tests/repair/test_differential.py", *pytest_args)
    if (verdict / "verdict").read_text().strip() != "0":
        session.error("the release watch found differences (above): see docs/contributing/new-release.md")


@nox.session(python=False)
def compare(session: nox.Session) -> None:
    """What each pinned release does with a stored history: `nox -s compare -- FILE [--json] [--prompt P]`.

    A thin call of `histfix compare --pinned` (see its --help) on this checkout's source, offline
    from the wheelhouse when it is built; its per-release environments are cached in the user cache.
    """
    if not session.posargs:
        session.error("usage: nox -s compare -- path/to/history.json [--json] [--prompt TEXT]")
    which = [] if "--releases" in session.posargs else ["--pinned"]
    offline = ["--find-links", str(WHEELHOUSE)] if wheelhouse_ready() else []
    command = [sys.executable, "-m", "histfix", "compare", *which, *offline, *session.posargs]
    session.run(*command, env={"PYTHONPATH": str(ROOT / "src"), "HISTFIX_UV": UV})


@nox.session
def bench(session: nox.Session) -> None:
    """Time our walk beside upstream repair_messages and the floor on four shapes, newest release (not a test)."""
    install_release(session, NEWEST)
    session.run("python", "benchmarks/bench_repair.py", *session.posargs)


def find_python(version: str) -> str | None:
    """An interpreter for `version` ("3.12"): `pythonX.Y` on PATH, else pyenv's newest X.Y.*, else None.

    A pyenv shim on PATH for a version that is installed but not selected fails when run, so a
    candidate counts only once it has run and reported the right version.
    """
    candidates = [shutil.which(f"python{version}")]
    pyenv = shutil.which("pyenv")
    root = os.environ.get("PYENV_ROOT")
    if pyenv and not root:
        found = subprocess.run([pyenv, "root"], capture_output=True, text=True, timeout=30, check=False)
        root = found.stdout.strip() or None
    if root:
        installed = Path(root, "versions").glob(f"{version}.*/bin/python{version}")
        newest_first = sorted(
            installed, key=lambda p: Version(p.parent.parent.name.split("-")[0]), reverse=True
        )
        candidates += [str(p) for p in newest_first]
    for candidate in filter(None, candidates):
        code = "import sys; print('%d.%d' % sys.version_info[:2])"
        try:
            ran = subprocess.run(
                [candidate, "-c", code], capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if ran.returncode == 0 and ran.stdout.strip() == version:
            return candidate
    return None


@nox.session(python=False)
def pythons(session: nox.Session) -> None:
    """The suite on the newest pinned release under every Python 3.10-3.13 found (and 1.107.10 on 3.10).

    Opt-in, never part of CI: an interpreter it cannot find (on PATH as pythonX.Y, or through
    pyenv), or a release that does not install on it (2.68.0 needs Python >= 3.11, hence the
    1.107.10 run on 3.10), is skipped and named in the summary; only a failing suite fails it. Each run gets its own uv venv in .nox/pythons-*,
    installed from the package index (the wheelhouse holds wheels for one Python only) with what a
    `tests` session installs (the provider SDKs too), and runs pytest serially, like the `tests`
    sessions: without the tools' tests and without tests/store (which need the postgres extra and
    run in `stores`). Posargs go to pytest.
    """
    runs = [(python, NEWEST) for python in PYTHONS] + PYTHONS_EXTRA
    summary = []
    failed = False
    for python, release in runs:
        interpreter = find_python(python)
        if interpreter is None:
            summary.append(f"Python {python}: not found, skipped (pydantic-ai-slim {release})")
            continue
        venv = ROOT / ".nox" / f"pythons-{python}-{release}"
        bin_python = venv / "bin" / "python"
        session.run(
            UV, "venv", "--quiet", "--allow-existing", "--python", interpreter, str(venv), external=True
        )
        install = [UV, "pip", "install", "--quiet", "--python", str(bin_python), "-e", "."]
        try:
            session.run(*install, *test_requirements(release, *TEST_TOOLS), external=True)
        except nox.command.CommandFailed:  # e.g. 2.x releases need Python >= 3.11: uv said why, above
            summary.append(
                f"Python {python} ({interpreter}): pydantic-ai-slim {release} does not install, skipped"
            )
            continue
        pytest = [str(bin_python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *NOT_PER_RELEASE]
        try:
            session.run(*pytest, *session.posargs, external=True)
            summary.append(f"Python {python} ({interpreter}): pydantic-ai-slim {release}: pass")
        except nox.command.CommandFailed:
            failed = True
            summary.append(f"Python {python} ({interpreter}): pydantic-ai-slim {release}: FAIL")
    for line in summary:
        session.log(line)
    if failed:
        session.error("the suite failed under at least one Python (see above)")


# --- mutation testing --------------------------------------------------------------------------------

#: What `mutation` mutates, by group: the modules (paths from the repository root) and the test files
#: that exercise them, fastest and most telling first (every mutant runs them with `-x`). The one
#: place to update when a module or a test file moves; the session stops naming any path that is gone.
MUTATION_TARGETS: dict[str, tuple[list[str], list[str]]] = {
    "switches": (
        [
            "src/histfix/_release/switches.py",
            "src/histfix/_release/detect.py",
            "src/histfix/_release/table.py",
        ],
        # test_versions: the fast paths' import check is what holds the table to no run-time import
        ["tests/release/test_compat.py", "tests/release/test_versions.py"],
    ),
    "backend": (
        ["src/histfix/_release/backend.py", "src/histfix/_release/versions.py"],
        ["tests/release/test_versions.py", "tests/test_api.py"],
    ),
    "profiles": (
        ["src/histfix/_profiles/registry.py"],
        [
            "tests/profiles/test_profiles.py",
            "tests/profiles/test_rules_ids.py",
            "tests/profiles/test_rules_results.py",
            "tests/profiles/test_rules_args.py",
            "tests/profiles/test_rules_native.py",
            "tests/profiles/test_rules_thinking.py",
            "tests/profiles/test_rules_reasoning.py",
            "tests/profiles/test_rules_files.py",
            "tests/profiles/test_rules_empty.py",
            "tests/profiles/test_rules_opening.py",
            "tests/profiles/test_rules_order.py",
            "tests/profiles/test_rules_instructions.py",
        ],
    ),
}
#: Where `mutation` works: a copy of src/ and tests/ (cosmic-ray rewrites the modules in place, one
#: mutant at a time), with each group's config and session database; kept for `cr-report` afterwards.
MUTATION_WORK = ROOT / ".nox" / "_mutation"
#: Seconds one mutant's test run may take before it counts as killed (a mutant that loops forever).
MUTATION_TIMEOUT = 300


def _mutation_groups(session: nox.Session) -> dict[str, tuple[list[str], list[str]]]:
    """The groups named in posargs (all when none), after checking every path still exists."""
    unknown = [name for name in session.posargs if name not in MUTATION_TARGETS]
    if unknown:
        session.error(f"unknown mutation group(s) {unknown}: choose from {sorted(MUTATION_TARGETS)}")
    chosen = {name: MUTATION_TARGETS[name] for name in session.posargs or MUTATION_TARGETS}
    missing = [
        path
        for modules, tests in chosen.values()
        for path in (*modules, *tests)
        if not (ROOT / path).exists()
    ]
    if missing:
        session.error(f"MUTATION_TARGETS in noxfile.py names paths that do not exist: {missing}")
    return chosen


def _mutation_config(modules: list[str], tests: list[str]) -> str:
    """A cosmic-ray config: mutate `modules`, run `tests` serially, stop at the first failure.

    Without the xdist and hypothesis plugins (no test in the groups needs them): loading them is a
    third of a run of tests/release/test_compat.py, and every mutant pays it.
    """
    plugins = ["-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:hypothesispytest"]
    pytest = ["python", "-m", "pytest", "-x", "-q", *plugins, *tests]
    return "\n".join(
        [
            "[cosmic-ray]",
            f"module-path = {json.dumps(modules)}",
            f"timeout = {float(MUTATION_TIMEOUT)}",
            "excluded-modules = []",
            f"test-command = {json.dumps(' '.join(pytest))}",
            "",
            "[cosmic-ray.distributor]",
            'name = "local"',
            "",
        ]
    )


def _mutation_results(dump: str) -> list[tuple[dict[str, object], dict[str, object]]]:
    """`cosmic-ray dump`'s lines as (work item, result) pairs, the unfinished left out."""
    rows = [json.loads(line) for line in dump.splitlines() if line.strip()]
    return [(item, result) for item, result in rows if result is not None]


@nox.session
def mutation(session: nox.Session) -> None:
    """Mutation testing (cosmic-ray) of the release switches, the backend selector and the profile
    registry on the newest pinned release: `nox -s mutation [-- GROUP...]` (groups: MUTATION_TARGETS).

    Opt-in and slow (about 320 mutants, each a fresh pytest run of its group's test files; timings
    and the survivors kept, with why, in docs/contributing/mutation.md). Installs from the package
    index (cosmic-ray is not in the wheelhouse), and not histfix itself: the tests import the
    mutated copy in MUTATION_WORK through PYTHONPATH. Runs a baseline first (the tests must pass
    unmutated), then every mutant, then prints each group's score and every surviving mutant as a
    diff. Fails only when a baseline fails.
    """
    groups = _mutation_groups(session)
    pyproject = nox.project.load_toml(ROOT / "pyproject.toml")
    requirements = release_requirements(
        NEWEST, *pyproject["project"]["dependencies"], *TEST_TOOLS, *MUTATION_TOOLS
    )
    session.install(*requirements, env=INSTALL_ENV)
    shutil.rmtree(MUTATION_WORK, ignore_errors=True)
    for folder in ("src", "tests"):
        shutil.copytree(ROOT / folder, MUTATION_WORK / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", MUTATION_WORK / "pyproject.toml")
    env = {"PYTHONPATH": str(MUTATION_WORK / "src")}
    summary = []
    killed_total = run_total = 0
    with session.chdir(MUTATION_WORK):
        for name, (modules, tests) in groups.items():
            config, database = f"{name}.toml", f"{name}.sqlite"
            Path(config).write_text(_mutation_config(modules, tests))
            session.log(f"{name}: baseline ({' '.join(tests)})")
            session.run("cosmic-ray", "baseline", config, env=env)
            session.run("cosmic-ray", "init", config, database, env=env)
            session.run("cosmic-ray", "exec", config, database, env=env)
            dump = session.run("cosmic-ray", "dump", database, silent=True, env=env) or ""
            results = _mutation_results(dump)
            survivors = [(item, result) for item, result in results if result["test_outcome"] == "survived"]
            killed = sum(1 for _, result in results if result["test_outcome"] == "killed")
            killed_total += killed
            run_total += len(results)
            score = f"{killed}/{len(results)} killed ({100 * killed / max(len(results), 1):.1f}%)"
            summary.append(f"{name}: {score}, {len(survivors)} survived")
            for item, result in survivors:
                (mutation_,) = item["mutations"]
                where = f"{mutation_['module_path']}:{mutation_['start_pos'][0]}"
                session.log(f"{name}: SURVIVED {where} {mutation_['operator_name']}\n{result['diff']}")
    for line in summary:
        session.log(line)
    session.log(
        f"mutation score: {killed_total}/{run_total} killed ({100 * killed_total / max(run_total, 1):.1f}%)"
    )
