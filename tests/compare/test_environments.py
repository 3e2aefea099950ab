"""histfix._compare.environments on its own: the cache of release environments and the probe's process.

The real builds (uv installing four releases) run once, in tests/compare/test_real_environments.py. These
put stand-ins for the two programs it starts (uv, and a release environment's python: small
scripts that answer as those do) behind the same calls, so what they check holds on every
release and takes milliseconds: a cached environment is reused and a stale one rebuilt, every
failure is one line naming the release and the reason, and each observation is checked to come
from the release asked for.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from histfix._compare import environments
from histfix._compare.environments import CompareError, Settings

#: A release environment's python: it answers the probe as ``python -m histfix._compare.probe``
#: does, for the release its folder is named after (the cache keeps each release in such a folder).
FAKE_PYTHON = f"""#!{sys.executable} -S
import json, os, sys
from pathlib import Path
if os.environ.get("FAKE_PROBE_FAILS"):
    sys.stderr.write("Traceback (most recent call last):\\n  ...\\nImportError: no pydantic_ai here\\n")
    sys.exit(1)
release = os.environ.get("FAKE_PROBE_RELEASE") or Path(__file__).resolve().parent.parent.name
side = {{"raised": None, "messages": [], "problems": []}}
got = {{"argv": sys.argv[1:], "stdin": sys.stdin.read()}}
print(json.dumps({{"release": release, "backend": "fake", "plain": side, "histfix": side, "got": got}}))
"""

#: uv: ``venv FOLDER`` makes the folder with FAKE_PYTHON in it, ``pip install`` succeeds; each
#: call is logged, and FAKE_UV_FAILS makes one of them fail the way uv reports a failure.
FAKE_UV = f"""#!{sys.executable} -S
import os, sys
from pathlib import Path
with open(os.environ["FAKE_UV_LOG"], "a") as log:
    log.write(sys.argv[1] + "\\n")
fails = os.environ.get("FAKE_UV_FAILS")
if sys.argv[1] == "venv":
    if fails == "venv":
        sys.stderr.write("error: No interpreter found for path `python9`\\n")
        sys.exit(2)
    python = Path(sys.argv[-1]) / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text({FAKE_PYTHON!r})
    python.chmod(0o755)
elif fails == "install":
    sys.stderr.write("  x no solution\\nerror: Because pydantic-ai-slim was not found, no solution\\n")
    sys.stderr.write("  cause: the wheel is missing\\n  cause: pydantic-ai-slim==9.9.9 is not in the folder\\n")
    sys.exit(1)
"""

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the stand-ins are POSIX scripts")


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    uv = tmp_path / "uv"
    uv.write_text(FAKE_UV)
    uv.chmod(0o755)
    monkeypatch.setenv("FAKE_UV_LOG", str(tmp_path / "uv.log"))
    return Settings(uv=str(uv), cache=tmp_path / "cache")


def uv_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "uv.log"
    return log.read_text().split() if log.exists() else []


def test_an_environment_is_built_once_then_reused_and_rebuilt_when_its_stamp_is_stale(
    settings: Settings, tmp_path: Path
) -> None:
    folder, cached = environments.environment("2.9.1", settings)
    assert (folder, cached) == (settings.cache / "2.9.1", False)
    assert uv_calls(tmp_path) == ["venv", "pip"]
    assert environments.environment("2.9.1", settings) == (folder, True)
    assert uv_calls(tmp_path) == ["venv", "pip"]  # nothing run again
    stamp = next(path for path in folder.iterdir() if path.suffix == ".json")
    stamp.write_text(json.dumps({"python": "another interpreter", "requirements": []}))
    assert environments.environment("2.9.1", settings) == (folder, False)
    assert uv_calls(tmp_path) == ["venv", "pip", "venv", "pip"]


def test_uv_failing_is_one_line_with_its_reason_and_leaves_no_half_built_environment(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_UV_FAILS", "venv")
    with pytest.raises(CompareError) as made:
        environments.environment("2.9.1", settings)
    assert str(made.value) == (
        "cannot create an environment for pydantic-ai-slim==2.9.1: No interpreter found for path `python9`"
    )
    monkeypatch.setenv("FAKE_UV_FAILS", "install")
    offline = Settings(settings.uv, settings.cache, find_links=tmp_path / "wheels")
    with pytest.raises(CompareError) as installed:
        environments.environment("2.9.1", offline)
    assert str(installed.value) == (
        f"cannot install pydantic-ai-slim==2.9.1 from {tmp_path / 'wheels'}: Because pydantic-ai-slim was"
        " not found, no solution: pydantic-ai-slim==9.9.9 is not in the folder"  # the innermost cause
    )
    assert not (settings.cache / "2.9.1").exists()


def test_uv_that_cannot_be_run_is_one_line(settings: Settings, tmp_path: Path) -> None:
    missing = Settings(str(tmp_path / "no-uv"), settings.cache)
    with pytest.raises(CompareError, match=r"^pydantic-ai-slim==2\.9\.1: cannot run .*no-uv \(No such file"):
        environments.environment("2.9.1", missing)


def test_compare_probes_each_release_in_its_environment_in_order_and_says_so(
    settings: Settings, tmp_path: Path
) -> None:
    said: list[str] = []
    raw = b'[{"kind": "request", "parts": []}]'
    observations = environments.compare(raw, ["1.0.0", "2.9.1"], "next", settings, said.append)
    assert [o["release"] for o in observations] == ["1.0.0", "2.9.1"]
    # the probe gets the history on stdin and the prompt as its option, in that release's python
    assert observations[0]["got"] == {
        "argv": ["-m", "histfix._compare.probe", "--prompt", "next"],
        "stdin": raw.decode(),
    }
    assert [line.split(":")[0] for line in said] == [
        "[1/2] pydantic-ai-slim 1.0.0",
        "[2/2] pydantic-ai-slim 2.9.1",
    ]
    assert all("built environment in" in line and "probed in" in line for line in said)
    said.clear()
    environments.compare(raw, ["2.9.1"], None, settings, said.append)
    assert said[0].startswith("[1/1] pydantic-ai-slim 2.9.1: cached environment, probed in ")


def test_a_probe_that_fails_or_runs_another_release_is_one_line(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, _ = environments.environment("2.9.1", settings)
    (tmp_path / "path").mkdir()
    path_entry = environments.histfix_on_a_path(tmp_path / "path")
    monkeypatch.setenv("FAKE_PROBE_FAILS", "1")
    with pytest.raises(CompareError) as failed:
        environments.probe("2.9.1", env, b"[]", None, path_entry)
    assert (
        str(failed.value) == "the probe failed on pydantic-ai-slim==2.9.1: ImportError: no pydantic_ai here"
    )
    monkeypatch.delenv("FAKE_PROBE_FAILS")
    monkeypatch.setenv("FAKE_PROBE_RELEASE", "2.9.0")
    with pytest.raises(CompareError) as other:
        environments.probe("2.9.1", env, b"[]", None, path_entry)
    assert str(other.value) == "the environment for 2.9.1 runs pydantic-ai-slim 2.9.0"
    monkeypatch.setenv("FAKE_PROBE_RELEASE", "2.9.1.0")  # the same release, spelled otherwise
    assert environments.probe("2.9.1", env, b"[]", None, path_entry)["release"] == "2.9.1.0"


def test_the_probes_path_holds_this_histfix_alone(tmp_path: Path) -> None:
    import histfix

    folder = tmp_path / "path"
    folder.mkdir()
    assert environments.histfix_on_a_path(folder) == folder
    assert [p.name for p in folder.iterdir()] == ["histfix"]
    assert (folder / "histfix").resolve() == Path(histfix.__file__).resolve().parent


def test_uv_named_in_the_environment_comes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HISTFIX_UV", "/opt/uv/bin/uv")
    assert environments.find_uv() == "/opt/uv/bin/uv"
