"""``histfix compare``: what several pydantic-ai releases do with one stored history, side by side.

Each release gets its own virtualenv, built once with uv and cached (``$XDG_CACHE_HOME/histfix/
compare/<release>``, or ``--cache-dir`` / ``$HISTFIX_COMPARE_CACHE``): it holds that
``pydantic-ai-slim`` with its pins and ``packaging``, never histfix. The running histfix is put on
the probe's path instead, so the cache stays valid across histfix versions and edits. uv comes
from the ``histfix[compare]`` extra (or ``$HISTFIX_UV``, or PATH).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from .._release.pinned import PINNED_RELEASES, release_requirements

__all__ = ["CompareError", "Settings", "compare", "find_uv", "parse_releases"]

OLDEST = Version("1.0.0")
_STAMP = "histfix-compare.json"
_INSTALL_TIMEOUT = 900.0  # seconds; a cold install from the index takes well under a minute
_PROBE_TIMEOUT = 300.0


class CompareError(Exception):
    """A comparison that cannot run; its message is the one line the user sees."""


def parse_releases(text: str | None) -> list[str]:
    """``"2.9.1,1.0.0"`` as release strings, oldest first; the pinned list when ``text`` is None."""
    if text is None:
        return list(PINNED_RELEASES)
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise CompareError("--releases needs at least one release, e.g. --releases 1.107.10,2.9.1,2.68.0")
    versions: dict[Version, str] = {}
    for name in names:
        try:
            version = Version(name)
        except InvalidVersion:
            raise CompareError(f"--releases: {name!r} is not a release number (e.g. 2.9.1)") from None
        if version < OLDEST:
            raise CompareError(f"--releases: {name} is older than 1.0.0, the oldest release histfix supports")
        versions.setdefault(version, name)
    return [versions[v] for v in sorted(versions)]


def find_uv() -> str:
    """The uv executable: ``$HISTFIX_UV``, the ``uv`` package (``histfix[compare]``), or PATH."""
    explicit = os.environ.get("HISTFIX_UV")
    if explicit:
        return explicit
    try:
        import uv  # type: ignore[import-not-found, unused-ignore]

        found: str = uv.find_uv_bin()
        return found
    except (ImportError, FileNotFoundError):
        pass
    on_path = shutil.which("uv")
    if on_path is None:
        raise CompareError("histfix compare needs uv: pip install 'histfix[compare]' (or put uv on PATH)")
    return on_path


def default_cache() -> Path:
    explicit = os.environ.get("HISTFIX_COMPARE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "histfix" / "compare"


@dataclass(frozen=True)
class Settings:
    """Where environments live and where their wheels come from."""

    uv: str
    cache: Path
    find_links: Path | None = None  # offline: install from this folder alone (no index)


def python_in(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _reason(stderr: str) -> str:
    """A failed uv run's reason on one line: its error, then the innermost cause uv gives."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line.removeprefix("error:").strip() for line in lines if line.startswith("error:")]
    causes = [line.removeprefix("cause:").strip() for line in lines if line.startswith("cause:")]
    if not errors:
        return lines[-1] if lines else "uv failed without saying why"
    return f"{errors[0]}: {causes[-1]}" if causes else errors[0]


def _run(argv: list[str], timeout: float, what: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, capture_output=True, check=False, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        raise CompareError(f"{what}: gave up after {timeout:.0f} s") from None
    except OSError as exc:
        raise CompareError(f"{what}: cannot run {argv[0]} ({exc.strerror})") from None


@contextlib.contextmanager
def _building(cache: Path, release: str) -> Iterator[None]:
    """One builder at a time per cached release: processes on one machine (Dask workers, two
    checks) that want the same environment wait for the first to build it, then reuse it."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CompareError(f"{cache}: cannot create the environment cache ({exc.strerror})") from None
    try:
        import fcntl
    except ImportError:  # not POSIX: builds are not serialized there
        yield
        return
    with open(cache / f".{release}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def environment(release: str, settings: Settings) -> tuple[Path, bool]:
    """The cached environment for ``release`` (built first if missing or stale), and whether it was cached."""
    with _building(settings.cache, release):
        return _environment(release, settings)


def _environment(release: str, settings: Settings) -> tuple[Path, bool]:
    folder = settings.cache / release
    requirements = release_requirements(release, "packaging")
    # Built for this interpreter (a virtualenv of it shares the cache); another Python rebuilds.
    wanted = {"python": f"{sys.base_prefix} {sys.version}", "requirements": requirements}
    stamp = folder / _STAMP
    try:
        if json.loads(stamp.read_text()) == wanted and python_in(folder).exists():
            return folder, True
    except (OSError, ValueError):
        pass
    shutil.rmtree(folder, ignore_errors=True)
    what = f"pydantic-ai-slim=={release}"
    made = _run([settings.uv, "venv", "--quiet", "--python", sys.executable, str(folder)], 120, what)
    if made.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise CompareError(
            f"cannot create an environment for {what}: {_reason(made.stderr.decode(errors='replace'))}"
        )
    source = ["--no-index", "--find-links", str(settings.find_links)] if settings.find_links else []
    install = [
        settings.uv,
        "pip",
        "install",
        "--quiet",
        "--compile-bytecode",
        "--python",
        str(python_in(folder)),
        *source,
    ]
    done = _run([*install, *requirements], _INSTALL_TIMEOUT, what)
    if done.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        where = f"from {settings.find_links}" if settings.find_links else "from the package index"
        raise CompareError(f"cannot install {what} {where}: {_reason(done.stderr.decode(errors='replace'))}")
    stamp.write_text(json.dumps(wanted, indent=1) + "\n")
    return folder, False


def histfix_on_a_path(folder: Path) -> Path:
    """A folder holding only this histfix package (a link to it), for the probe's PYTHONPATH."""
    package = (
        Path(__file__).resolve().parent.parent
    )  # histfix/ (this module is histfix/_compare/environments.py)
    link = folder / "histfix"
    try:
        link.symlink_to(package, target_is_directory=True)
    except OSError:
        shutil.copytree(package, link)
    return folder


def probe(release: str, env: Path, raw: bytes, prompt: str | None, path_entry: Path) -> dict[str, Any]:
    """Run the probe in ``env`` on ``raw``; its observation, checked to come from ``release``."""
    argv = [str(python_in(env)), "-m", "histfix._compare.probe"]
    if prompt is not None:
        argv += ["--prompt", prompt]
    variables = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    variables |= {"PYTHONPATH": str(path_entry), "PYTHONNOUSERSITE": "1"}
    done = _run(argv, _PROBE_TIMEOUT, f"pydantic-ai-slim=={release}", input=raw, env=variables)
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()
        raise CompareError(
            f"the probe failed on pydantic-ai-slim=={release}: {tail[-1] if tail else 'no output'}"
        )
    observation: dict[str, Any] = json.loads(done.stdout)
    if Version(observation["release"]) != Version(release):
        raise CompareError(f"the environment for {release} runs pydantic-ai-slim {observation['release']}")
    return observation


def compare(
    raw: bytes,
    releases: Sequence[str],
    prompt: str | None,
    settings: Settings,
    progress: Callable[[str], None],
) -> list[dict[str, Any]]:
    """One observation per release, oldest first; ``progress`` gets one line per release."""
    observations = []
    with tempfile.TemporaryDirectory(prefix="histfix-compare-") as scratch:
        path_entry = histfix_on_a_path(Path(scratch))
        for number, release in enumerate(releases, 1):
            start = time.perf_counter()
            env, cached = environment(release, settings)
            built = time.perf_counter()
            observations.append(probe(release, env, raw, prompt, path_entry))
            how = "cached environment" if cached else f"built environment in {built - start:.1f} s"
            progress(
                f"[{number}/{len(releases)}] pydantic-ai-slim {release}: {how}, "
                f"probed in {time.perf_counter() - built:.1f} s"
            )
    return observations
