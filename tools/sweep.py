"""Run the whole suite on every pydantic-ai-slim release on PyPI and record each one (`nox -s sweep`).

Usage: python tools/sweep.py --record tests/data/sweep.json [--fresh] [--jobs N] [--only X,Y]
                             [--fuzz-examples N]
       python tools/sweep.py --providers --record tests/data/sweep-providers.json [--generated N] ...

The release list is discovered from PyPI's JSON API (final releases from 1.0.0 on; pre-releases
are not swept). Each release gets a fresh virtualenv (`uv venv --clear`, then `uv pip install` of
histfix, pytest and `pydantic-ai-slim[<provider extras>]==X` with the noxfile's `release_pins`), so no release
inherits another's dependencies; `--jobs` workers (default: one per CPU) each own one such env.
The suite runs with `--record-outcome`; what it records (installed, the path `auto` took, test
counts and failing test ids, the measured scenarios, and with HISTFIX_PROVIDER_SAMPLE=all every
provider case of tests/profiles/test_provider_truth.py, each way including the provider profiles, and the
500 generated histories per provider of tests/profiles/test_provider_generated.py) goes into the record
file after every release.
The property-based fuzz tests run `--fuzz-examples` examples per property (HISTFIX_FUZZ_EXAMPLES,
default 100 here against 500 in the pinned matrix): at 500 they triple the time per release and
the sweep would take about 50 minutes instead of about 25 on two cores. The generated provider
histories (500 to every API, both profile ways) cost minutes per release more (see
TIMEOUT_SECONDS), which makes a whole sweep hours long on two cores.

`--providers` (`nox -s sweep -- --providers`, record tests/data/sweep-providers.json) installs each
release the same way but runs only the provider tests, which is what the provider profiles'
claim rests on: tests/profiles/test_provider_truth.py with every corpus case (HISTFIX_PROVIDER_SAMPLE=all:
each case to all 6 APIs as stored, after the default repairs and after both profile ways, the
profile ways asserted accepted) and tests/profiles/test_provider_generated.py with `--generated N`
histories (default GENERATED_SWEEP) to every API both profile ways, seeds differing by release.
What it proves: on every release swept, each API's profile and `any` make every corpus history and
those generated ones accepted by that release's own model class and SDK against the emulators.
The record keeps counts per API and way, and only the profile ways' non-accepted cases.
How long: the corpus cross product dominates (about 1 900 distinct sends per release: 45 s on
1.0.0, 100-270 s on 1.67.0 and later, measured with `--jobs 1` on the shared 2-core machine while
others worked; about 20 s of it installing and importing the SDKs afresh), so all 223 releases
take 3-5 hours there, not the 70 minutes hoped for; the generated histories add about 1.2 s per
history on 2.x (12 sends). The long campaign (HISTFIX_PROVIDER_GENERATED=500 on the pinned
releases: docs/contributing/fuzzing.md, "The long campaign") covers generated histories in depth: 6 000 sends a release.

Resumable: a release already recorded for the same histfix source (a hash of src/ and tests/)
is skipped (in `--providers` mode, for the same `--generated` too), so an interrupted sweep
continues where it stopped; `--fresh` re-runs everything.
Exit status 1 when any release did not install or did not pass.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import json
import os
import queue
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".nox" / "_sweep"
PYPI_JSON = "https://pypi.org/pypi/pydantic-ai-slim/json"
FIRST = Version("1.0.0")
#: A suite run longer than this is stopped and recorded as timed out. A run takes minutes since
#: tests/profiles/test_provider_generated.py sends its cross product (500 histories to every API both ways:
#: 230-380 s of round trips measured on 2.68.0 on a loaded 2-core machine), hence the margin.
TIMEOUT_SECONDS = 1800


def noxfile_list(name: str, noxfile: Path = ROOT / "noxfile.py") -> tuple[str, ...]:
    """The literal list the noxfile assigns to ``name``, read from its source (importing it needs nox)."""
    for node in ast.parse(noxfile.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            return tuple(ast.literal_eval(value))
    raise LookupError(f"{noxfile} assigns no {name}")


#: The release-independent tests, which the per-release runs leave out (`nox -s tools` runs them
#: once): the noxfile's own list.
RELEASE_INDEPENDENT = noxfile_list("RELEASE_INDEPENDENT_TESTS")
#: `--providers`: only the provider tests run per release (the corpus cross product and
#: `--generated` histories to every API both ways), recorded small (counts and failures).
PROVIDER_TESTS = (
    "tests/profiles/test_provider_truth.py",
    "tests/profiles/test_provider_generated.py",
    "tests/profiles/test_provider_prefixes.py",
)
#: Generated histories per release in `--providers` mode (each to 6 APIs x 2 ways): picked so the
#: 223-release sweep fits about 70 minutes with `--jobs 1` on the 2-core machine (see the docstring).
GENERATED_SWEEP = 10
#: The profile ways (asserted accepted): their non-accepted cases are kept in a providers record;
#: the other ways (as stored, the default repairs) are data and kept as counts only.
PROFILE_WAYS = ("profile", "any")
#: Keys of a `--record-outcome` record worth keeping per release (the rest is in compat-matrix.md).
KEPT = (
    "pydantic_ai",
    "backend",
    "features",
    "outcomes",
    "scenarios",
    "facts",
    "failed",
    "exitstatus",
    "providers",
    "providers_generated",
    "providers_prefixes",
)

Entry = dict[str, Any]
Record = dict[str, Any]


def discover_releases(index: dict[str, Any]) -> list[str]:
    """Final releases from 1.0.0 on that have files, oldest first, from PyPI's JSON for the project."""
    found = []
    for name, files in index["releases"].items():
        try:
            version = Version(name)
        except InvalidVersion:
            continue
        if files and version >= FIRST and not version.is_prerelease and not version.is_devrelease:
            found.append(version)
    return [str(v) for v in sorted(found)]


def fetch_index() -> dict[str, Any]:
    with urllib.request.urlopen(PYPI_JSON, timeout=60) as response:
        return json.load(response)  # type: ignore[no-any-return]


def source_fingerprint(root: Path = ROOT) -> str:
    """A hash of the code a sweep measures: histfix, the suite and the tools it imports (not the record)."""
    digest = hashlib.sha256()
    code = [*root.glob("src/**/*.py"), *root.glob("tests/**/*.py"), *root.glob("tools/**/*.py")]
    files = sorted([*code, *root.glob("tests/data/**/*")])
    for path in files:
        if (
            (path.name.startswith("sweep") and path.suffix == ".json")
            or "__pycache__" in path.parts
            or not path.is_file()
        ):
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def pending(
    releases: Iterable[str], recorded: dict[str, Entry], fingerprint: str, generated: int | None = None
) -> list[str]:
    """The releases still to sweep: those not recorded for this fingerprint (and, in `--providers`
    mode, this count of generated histories)."""
    return [
        r
        for r in releases
        if recorded.get(r, {}).get("fingerprint") != fingerprint
        or (generated is not None and recorded[r].get("generated") != generated)
    ]


def verdict(entry: Entry) -> str:
    """`pass`, `FAIL`, `not installed` or `no result`, for progress lines and the summary."""
    if not entry["installed"]:
        return "not installed"
    run = entry.get("run")
    if run is None:
        return "no result"
    return "pass" if run["exitstatus"] == 0 else "FAIL"


def load_record(path: Path) -> dict[str, Any]:
    if path.exists():
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    return {"releases": {}}


def save_record(path: Path, record: dict[str, Any]) -> None:
    """Write atomically, releases in version order, one release per block (stable diffs)."""
    record["releases"] = dict(sorted(record["releases"].items(), key=lambda item: Version(item[0])))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)


def suite_env(fuzz_examples: int) -> dict[str, str]:
    """The suite's environment per release: every provider case, not the pinned matrix's sample
    (tests/profiles/test_provider_truth.py), and the cross product of GENERATED_ALL generated histories
    (tests/profiles/test_provider_generated.py); `fuzz_examples` per fuzz property."""
    env = {**os.environ, "HISTFIX_FUZZ_EXAMPLES": str(fuzz_examples), "HISTFIX_PROVIDER_SAMPLE": "all"}
    env.pop("HISTFIX_PROVIDER_GENERATED", None)  # a count set for a campaign must not shrink the sweep
    return env


def provider_env(generated: int) -> dict[str, str]:
    """`--providers` mode's environment: every corpus case (HISTFIX_PROVIDER_SAMPLE=all) and
    `generated` histories to every API both ways (HISTFIX_PROVIDER_GENERATED)."""
    return {**os.environ, "HISTFIX_PROVIDER_SAMPLE": "all", "HISTFIX_PROVIDER_GENERATED": str(generated)}


def _small_tally(tally: Record | None, keep_failures: bool) -> Entry | None:
    if tally is None:
        return None
    kept: Entry = {"measured": tally.get("measured", 0), "accepted": tally.get("accepted", 0)}
    if keep_failures:
        kept["not_accepted"] = tally.get("not_accepted") or {}
    return kept


def small_providers(summary: Entry | None) -> Entry | None:
    """A provider summary (truth or generated) cut to what the sweep record keeps: per API the
    client, counts per way, and only the profile ways' non-accepted cases (no case list)."""
    if summary is None:
        return None
    apis = {}
    for api, entry in summary.get("apis", {}).items():
        small = {key: entry.get(key) for key in ("client", "unavailable", "cases", "seconds") if key in entry}
        for way, tally in entry.items():
            if isinstance(tally, dict) and "measured" in tally:
                small[way] = _small_tally(tally, keep_failures=way in PROFILE_WAYS)
        apis[api] = small
    keys = ("sample", "selected", "histories", "seeds", "distinct", "refused", "seconds")
    return {**{key: summary[key] for key in keys if key in summary}, "apis": apis}


def small_prefixes(summary: Entry | None) -> Entry | None:
    """tests/profiles/test_provider_prefixes.py's summary cut the same way: per prefix the client and the
    counts per way (corpus and ``gen_`` generated), the non-accepted cases of the profile ways only
    (the stored and default-repair ways' refusals are data the pinned matrix shows, not failures)."""
    if summary is None:
        return None
    prefixes = {}
    for prefix, entry in (summary.get("prefixes") or {}).items():
        small = {key: entry.get(key) for key in ("client", "unavailable", "cases", "seconds") if key in entry}
        for way, tally in entry.items():
            if isinstance(tally, dict) and "measured" in tally:
                kept = way.removeprefix("gen_") in PROFILE_WAYS
                small[way] = _small_tally(tally, keep_failures=kept)
        prefixes[prefix] = small
    return {**{key: value for key, value in summary.items() if key != "prefixes"}, "prefixes": prefixes}


def run_suite(
    release: str, python: Path, fuzz_examples: int, generated: int | None = None
) -> tuple[Entry | None, str | None]:
    """The suite's `--record-outcome` record on one installed release (trimmed to KEPT), or an error.

    With `generated` (`--providers`), only PROVIDER_TESTS run, and the provider summaries are cut
    to counts and failures (`small_providers`). pytest's output goes to .nox/_sweep/RELEASE.log,
    for investigating a failure.
    """
    report, log = WORK / f"{release}.json", WORK / f"{release}.log"
    report.unlink(missing_ok=True)
    command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--record-outcome={report}"]
    if generated is None:
        command += [f"--ignore={path}" for path in RELEASE_INDEPENDENT]
        env = suite_env(fuzz_examples)
    else:
        command += ["-p", "no:randomly", *PROVIDER_TESTS]
        env = provider_env(generated)
    try:
        with log.open("w") as out:
            subprocess.run(
                command,
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=TIMEOUT_SECONDS,
                check=False,
            )
    except subprocess.TimeoutExpired:
        return None, f"the suite timed out after {TIMEOUT_SECONDS} s"
    if not report.exists():
        return None, "the suite wrote no result:\n" + _tail(log.read_text())
    outcome = json.loads(report.read_text())
    kept = {key: outcome.get(key) for key in KEPT}
    if generated is not None:
        kept["providers"] = small_providers(kept["providers"])
        kept["providers_generated"] = small_providers(kept["providers_generated"])
        kept["providers_prefixes"] = small_prefixes(kept["providers_prefixes"])
        for key in ("scenarios", "features"):
            kept.pop(key)
    return kept, None


def sweep_one(
    release: str, venv: Path, requirements: list[str], uv: str, fuzz_examples: int, *, generated: int | None
) -> Entry:
    """Install `release` into a fresh `venv` (with the `uv` executable) and run the suite there
    (only the provider tests when `generated` is set)."""
    started = time.monotonic()
    python = venv / "bin" / "python"
    made = _run([uv, "venv", "--quiet", "--clear", "--python", sys.executable, str(venv)])
    install = [uv, "pip", "install", "--quiet", "--python", str(python), "-e", str(ROOT), *requirements]
    installed = made if made.returncode else _run(install)
    if installed.returncode:
        entry: Entry = {"installed": False, "error": _tail(installed.stderr), "run": None}
    else:
        run, error = run_suite(release, python, fuzz_examples, generated)
        entry = {"installed": True, "error": error, "run": run}
        entry.update({"fuzz_examples": fuzz_examples} if generated is None else {"generated": generated})
    return {**entry, "seconds": round(time.monotonic() - started, 1)}


def run_all(
    requirements: dict[str, list[str]],
    uv: str,
    jobs: int,
    fuzz_examples: int,
    on_done: Callable[[str, Entry], None],
    *,
    generated: int | None = None,
) -> None:
    """Sweep each release (a key of `requirements`) on `jobs` workers, each with its own env.

    `on_done` sees every finished release, in the order they finish.
    """
    slots: queue.Queue[Path] = queue.Queue()
    for n in range(jobs):
        slots.put(WORK / f"venv-{n}")

    def task(release: str) -> Entry:
        venv = slots.get()
        try:
            return sweep_one(release, venv, requirements[release], uv, fuzz_examples, generated=generated)
        finally:
            slots.put(venv)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(task, release): release for release in requirements}
        try:
            for future in as_completed(futures):
                on_done(futures[future], future.result())
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def requirements_for(releases: list[str]) -> dict[str, list[str]]:
    """The noxfile's requirements per release (pins included), so the sweep and the matrix agree."""
    sys.path.insert(0, str(ROOT))
    import noxfile

    return {release: noxfile.test_requirements(release, *noxfile.TEST_TOOLS) for release in releases}


def profile_counts(run: Entry) -> str:
    """`corpus A/M, generated A/M`: the profile ways' sends accepted, over every API (progress lines)."""
    parts = []
    for label, key in (("corpus", "providers"), ("generated", "providers_generated")):
        apis = (run.get(key) or {}).get("apis") or {}
        ways = [entry.get(way) or {} for entry in apis.values() for way in PROFILE_WAYS]
        accepted, measured = sum(w.get("accepted", 0) for w in ways), sum(w.get("measured", 0) for w in ways)
        parts.append(f"{label} {accepted}/{measured}")
    return ", ".join(parts)


def _progress(done: int, total: int, release: str, entry: Entry) -> str:
    run = entry.get("run") or {}
    counts = ", ".join(f"{n} {k}" for k, n in (run.get("outcomes") or {}).items())
    if entry.get("generated") is not None:
        counts += "; " + profile_counts(run)
    return f"[{done}/{total}] {release:<9} {verdict(entry):<13} {counts}  ({entry['seconds']} s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", type=Path, required=True, help="the JSON record to resume and update")
    parser.add_argument("--fresh", action="store_true", help="re-run releases already recorded")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel workers")
    parser.add_argument("--only", help="comma-separated releases to sweep (default: all on PyPI)")
    parser.add_argument("--fuzz-examples", type=int, default=100, help="examples per fuzz property")
    parser.add_argument(
        "--providers", action="store_true", help="only the provider tests, full corpus cross product"
    )
    parser.add_argument(
        "--generated", type=int, default=GENERATED_SWEEP, help="--providers: generated histories per release"
    )
    parser.add_argument("--uv", default="uv", help="the uv executable (the noxfile passes the one nox uses)")
    args = parser.parse_args(argv)

    record = load_record(args.record)
    if args.only:
        releases = args.only.split(",")
        if "on_pypi" not in record:
            with contextlib.suppress(OSError, ValueError):
                record["on_pypi"] = len(discover_releases(fetch_index()))
    else:
        releases = discover_releases(fetch_index())
        record["on_pypi"] = len(releases)
    fingerprint = source_fingerprint()
    generated = max(1, args.generated) if args.providers else None
    todo = releases if args.fresh else pending(releases, record["releases"], fingerprint, generated)
    print(
        f"{len(releases)} releases {releases[0]}..{releases[-1]}; {len(todo)} to sweep "
        f"(histfix source {fingerprint}), {args.jobs} workers"
        + (f", provider tests only ({generated} generated histories each)" if generated else ""),
        flush=True,
    )
    WORK.mkdir(parents=True, exist_ok=True)
    today = datetime.now(timezone.utc).date().isoformat()
    started = time.monotonic()

    finished = []

    def on_done(release: str, entry: Entry) -> None:
        record["releases"][release] = {"fingerprint": fingerprint, "swept_at": today, **entry}
        save_record(args.record, record)
        finished.append(release)
        print(_progress(len(finished), len(todo), release, entry), flush=True)

    run_all(
        requirements_for(todo), args.uv, max(1, args.jobs), args.fuzz_examples, on_done, generated=generated
    )
    bad = {r: verdict(record["releases"][r]) for r in releases if verdict(record["releases"][r]) != "pass"}
    elapsed = time.monotonic() - started
    print(
        f"swept {len(finished)} releases in {elapsed:.0f} s; {len(releases) - len(bad)}/{len(releases)} pass"
    )
    for release, what in bad.items():
        print(f"  {release}: {what}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
