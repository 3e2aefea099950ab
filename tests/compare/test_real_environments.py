"""`histfix compare` for real: the environments it builds from a wheelhouse, and its install errors.

Release-independent, so the `tools` session runs these once (no `tests(X)` session repeats them):
`histfix compare` builds its own environment per release it is asked about (here 1.0.0, 2.9.1,
2.10.0 and the newest, from the wheelhouse) and probes each there, so what the session itself has
installed never enters; the pure parts and the probe on the installed release stay in
tests/cli/test_compare.py and run on every release.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from histfix._compare.probe import PLAIN
from histfix._compare.probe import REPAIRED as HISTFIX
from histfix._release.pinned import NEWEST

from release_envs import WHEELHOUSE, offline, uv_or_none

ROOT = Path(__file__).parent.parent.parent
EXAMPLES = ROOT / "examples"


OFFLINE_RELEASES = ["1.0.0", "2.9.1", "2.10.0", NEWEST]


def histfix_compare(*argv: str, cache: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "histfix", "compare", *argv, "--find-links", str(WHEELHOUSE)]
    return subprocess.run(
        [*command, "--cache-dir", str(cache)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env={**os.environ, "NO_COLOR": "1"},
    )


@pytest.fixture(scope="module")
def cache() -> Path:
    """Environments kept between runs (under .nox/, git-ignored), so only the first run builds them."""
    return ROOT / ".nox" / "_compare_envs"


@offline
def test_compare_offline_on_four_releases(cache: Path) -> None:
    history = EXAMPLES / "aborted_mid_tool.json"
    done = histfix_compare(str(history), "--releases", ",".join(OFFLINE_RELEASES), cache=cache)
    assert done.returncode == 0, done.stderr
    progress = done.stderr.splitlines()
    assert len(progress) == 4
    for number, (line, release) in enumerate(zip(progress, OFFLINE_RELEASES, strict=True), 1):
        assert line.startswith(f"histfix compare: [{number}/4] pydantic-ai-slim {release}: ")
        assert "environment" in line and "probed in" in line
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line[:1].isdigit()}
    assert list(rows) == OFFLINE_RELEASES
    assert "A  sends 3 messages · strict provider: 400 (1 problem)" in rows["1.0.0"]
    assert "A  sends 3 messages · strict provider: 400 (1 problem)" in rows["2.9.1"]
    assert "B* sends 3 messages · valid" in rows["2.10.0"]
    assert rows[NEWEST].split()[1] == "upstream"
    assert all("returns 3 messages · valid" in row for row in rows.values())
    assert "    No tool output found for function call call_1." in done.stdout
    assert "  +  2 request   tool-return    retrieve_documents(call_1)" in done.stdout

    again = histfix_compare(str(history), "--releases", "2.9.1,2.10.0", "--json", cache=cache)
    assert again.returncode == 0, again.stderr
    assert all("cached environment" in line for line in again.stderr.splitlines())  # reused
    data = json.loads(again.stdout)
    assert [r["release"] for r in data["releases"]] == ["2.9.1", "2.10.0"]
    assert data["releases"][1][PLAIN]["changed"] is True


@offline
def test_compare_continues_a_finished_conversation(cache: Path, tmp_path: Path) -> None:
    finished = json.loads((EXAMPLES / "aborted_mid_tool.json").read_text())[:1]
    finished.append(
        {
            "kind": "response",
            "parts": [{"part_kind": "text", "content": "done"}],
            "timestamp": "2026-01-01T00:00:01Z",
        }
    )
    path = tmp_path / "finished.json"
    path.write_text(json.dumps(finished))
    done = histfix_compare(str(path), "--releases", f"1.0.0,{NEWEST}", cache=cache)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith(
        "A finished conversation sends nothing without a new prompt"
    )
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line[:1].isdigit()}
    assert "sends 3 messages · valid" in rows["1.0.0"] and "sends 3 messages · valid" in rows[NEWEST]


@offline
def test_compare_with_a_prompt_shows_the_refusal(cache: Path) -> None:
    trailing = json.loads((EXAMPLES / "aborted_mid_tool.json").read_text())[:2]  # ends on the open call
    releases = ["--releases", f"2.9.1,{NEWEST}", "--prompt", "next", "--json"]
    where = ["--find-links", str(WHEELHOUSE), "--cache-dir", str(cache)]
    done = subprocess.run(
        [sys.executable, "-m", "histfix", "compare", "-", *releases, *where],
        input=json.dumps(trailing),
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    for release in json.loads(done.stdout)["releases"]:
        assert release[PLAIN]["summary"].startswith("raises UserError: Cannot provide a new user prompt")
        assert release[HISTFIX]["summary"] == "returns 3 messages · valid"  # the call closed


@offline
def test_a_release_missing_from_the_wheelhouse_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = histfix_compare(str(EXAMPLES / "aborted_mid_tool.json"), "--releases", "2.9.2", cache=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1
    # the folder as the command resolved it: a worktree's wheelhouse is a link to the shared one
    assert done.stderr.startswith(
        f"histfix: cannot install pydantic-ai-slim==2.9.2 from {WHEELHOUSE.resolve()}"
    )
    assert "no version of pydantic-ai-slim==2.9.2" in done.stderr
    assert not (tmp_path / "2.9.2").exists()  # a failed build leaves no half environment behind


@pytest.mark.skipif(uv_or_none() is None, reason="needs uv (pip install 'histfix[compare]')")
def test_an_unreachable_index_is_one_line_and_exit_2(tmp_path: Path) -> None:
    history = str(EXAMPLES / "aborted_mid_tool.json")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "histfix",
            "compare",
            history,
            "--releases",
            "2.9.1",
            "--cache-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={
            **os.environ,
            "UV_INDEX_URL": "http://127.0.0.1:9/simple",  # the discard port: nothing listens there
            "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
            "UV_HTTP_RETRIES": "0",
        },
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("histfix: cannot install pydantic-ai-slim==2.9.1 from the package index: ")
