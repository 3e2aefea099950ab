"""histfix as a process: its import graph, the command's fast paths and early errors, a real pipe.

Release-independent, so the `tools` session runs these once (no `tests(X)` session repeats them):
each starts a fresh Python, and what it asserts does not reach the installed pydantic-ai (histfix
imports without it; ``info``, ``--help`` and ``--version`` never import it; a bad
``HISTFIX_BACKEND`` is refused before any history is read; pydantic-ai hidden as if not
installed). The one that does reach it, ``repair -`` through a pipe, has an in-process twin in
tests/cli/test_cli.py that runs on every release and checks the repaired history there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pydantic_ai import messages as pai

EXAMPLES = Path(__file__).parent.parent / "examples"


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "history.json"
    path.write_bytes((EXAMPLES / "aborted_mid_tool.json").read_bytes())
    return path


# --- the library (from tests/test_api.py) ----------------------------------------------------------


def test_import_does_not_import_pydantic_ai() -> None:
    done = run_python("import sys, histfix; print('pydantic_ai' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_import_loads_the_public_names_only_when_one_is_used() -> None:
    """``import histfix`` loads no submodule (the command line's --help, --version and info stay
    fast); the first public name loads the one list of them, ``histfix._public``, still without
    pydantic-ai."""
    code = """
        import sys, histfix
        print(sorted(m for m in sys.modules if m.startswith("histfix.")))
        histfix.Problem
        print("histfix._public" in sys.modules, "pydantic_ai" in sys.modules)
    """
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    bare, after = done.stdout.splitlines()
    assert bare == "[]"
    assert after == "True False"


def test_missing_pydantic_ai_says_what_to_install() -> None:
    done = run_python(
        """
        import sys
        sys.modules['pydantic_ai'] = None  # as if not installed
        import histfix
        try:
            histfix.repair([])
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "pip install pydantic-ai-slim" in done.stdout


# --- the command line (from tests/cli/test_cli.py) -------------------------------------------------


def test_repair_from_stdin_to_stdout_through_a_pipe(broken: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "histfix", "repair", "-"],
        input=broken.read_bytes(),
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert pai.ModelMessagesTypeAdapter.validate_json(done.stdout)[2].parts[0].tool_call_id == "call_1"


@pytest.mark.parametrize("argv", [["info"], ["--help"], ["--version"]])
def test_fast_paths_do_not_import_pydantic_ai(argv: list[str]) -> None:
    code = (
        "import sys, time; t = time.perf_counter(); from histfix._cli.commands import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print('IMPORTED' if 'pydantic_ai' in sys.modules else 'clean', time.perf_counter() - t)"
    )
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split()[-2] == "clean"
    assert time.perf_counter() - start < 3  # generous for CI; measured ~0.06-0.09 s on the 2-core machine


#: What `--help` and `--version` must not import: each costs a measurable part of their start-up
#: (docs/contributing/benchmarks.md), and argparse alone needs none of them.
_NOT_FOR_HELP = ("typing", "json", "pathlib", "tempfile", "importlib.metadata", "histfix._api")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["info"]])
def test_fast_paths_import_only_what_they_need(argv: list[str]) -> None:
    code = (
        "import sys; from histfix._cli.commands import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print(*[name for name in {_NOT_FOR_HELP!r} if name in sys.modules], file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    imported = done.stderr.split()
    if argv == ["info"]:  # it decides the backend (packaging) and checks a release's pins (metadata)
        assert "histfix._api" not in imported, imported
    else:
        assert imported == [], imported


@pytest.mark.parametrize("argv", [["info"], ["repair", "{file}"], ["show", "{file}"], ["check", "{file}"]])
def test_a_bad_backend_variable_is_one_line_and_exit_2(broken: Path, argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "histfix", *(a.format(file=broken) for a in argv)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HISTFIX_BACKEND": "bogus"},
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "histfix: HISTFIX_BACKEND='bogus': use 'upstream' or 'histfix', or leave it unset\n"
    )


# --- interrupted while writing --------------------------------------------------------------------

# Runs the command line with fsync held up (after the temporary file is written, before the rename),
# so that a signal lands exactly while a temporary file exists; FLAG says it has got there.
_HELD_AT_FSYNC = """
import os, pathlib, sys, time
def held(fd):
    pathlib.Path(sys.argv[1]).touch()
    time.sleep(60)
os.fsync = held
from histfix._cli.commands import main
sys.exit(main(sys.argv[2:]))
"""


def temporary_files(pid: int, folder: Path) -> int:
    """The temporary files in ``folder``: named ones (``.*.tmp``), and the nameless ones process
    ``pid`` holds open there (Linux's O_TMPFILE, which /proc shows as ``FOLDER/#INODE (deleted)``)."""
    named = len(list(folder.glob(".*.tmp")))
    fds = Path(f"/proc/{pid}/fd")
    nameless = [os.readlink(fd) for fd in fds.iterdir()] if fds.is_dir() else []
    return named + sum(1 for link in nameless if link.startswith(f"{folder}/#"))


@pytest.mark.parametrize(("signal_number", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
@pytest.mark.parametrize("where", ["--in-place", "-o"])
def test_a_signal_while_writing_leaves_no_temporary_and_no_traceback(
    tmp_path: Path, signal_number: int, status: int, where: str
) -> None:
    history = tmp_path / "history.json"
    original = (EXAMPLES / "aborted_mid_tool.json").read_bytes()
    history.write_bytes(original)
    out = tmp_path / "out.json"
    out.write_text("old")
    flag = tmp_path.parent / f"{tmp_path.name}.flag"
    argv = ["repair", str(history), *(["--in-place"] if where == "--in-place" else ["-o", str(out)])]
    child = subprocess.Popen(
        [sys.executable, "-c", _HELD_AT_FSYNC, str(flag), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not flag.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert flag.exists(), child.communicate(timeout=10)
        assert temporary_files(child.pid, tmp_path) == 1  # the moment: a temporary file exists
        child.send_signal(signal_number)
        _, err = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait(timeout=10)
    assert child.returncode == status
    assert "Traceback" not in err and err == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.json", "out.json"]
    assert history.read_bytes() == original and out.read_text() == "old"
