"""`nox -s sweep`: which releases it finds on PyPI, which it resumes, how it judges and fingerprints."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep import (
    KEPT,
    RELEASE_INDEPENDENT,
    discover_releases,
    noxfile_list,
    pending,
    profile_counts,
    provider_env,
    small_prefixes,
    small_providers,
    source_fingerprint,
    suite_env,
    verdict,
)


def test_discovers_final_releases_from_1_0_in_version_order() -> None:
    index = {
        "releases": {
            "0.8.1": [{"filename": "a.whl"}],
            "1.10.0": [{"filename": "b.whl"}],
            "1.9.0": [{"filename": "c.whl"}],
            "2.0.0b1": [{"filename": "d.whl"}],
            "2.0.0": [{"filename": "e.whl"}],
            "2.0.1": [],  # registered, nothing uploaded
            "not-a-version": [{"filename": "f.whl"}],
        }
    }
    assert discover_releases(index) == ["1.9.0", "1.10.0", "2.0.0"]


def test_resume_skips_what_this_source_already_recorded() -> None:
    recorded = {"1.0.0": {"fingerprint": "new"}, "1.0.1": {"fingerprint": "old"}}
    assert pending(["1.0.0", "1.0.1", "1.0.2"], recorded, "new") == ["1.0.1", "1.0.2"]


def test_verdicts() -> None:
    assert verdict({"installed": False, "run": None}) == "not installed"
    assert verdict({"installed": True, "run": None}) == "no result"
    assert verdict({"installed": True, "run": {"exitstatus": 0}}) == "pass"
    assert verdict({"installed": True, "run": {"exitstatus": 1}}) == "FAIL"


def test_fingerprint_follows_source_and_suite_but_not_the_record(tmp_path: Path) -> None:
    (tmp_path / "src" / "histfix").mkdir(parents=True)
    (tmp_path / "tests" / "data").mkdir(parents=True)
    module = tmp_path / "src" / "histfix" / "_walk.py"
    module.write_text("x = 1\n")
    record = tmp_path / "tests" / "data" / "sweep.json"
    record.write_text("{}")
    (tmp_path / "tests" / "data" / "dumps").mkdir()  # folders are walked, not read
    first = source_fingerprint(tmp_path)
    record.write_text('{"releases": {}}')
    assert source_fingerprint(tmp_path) == first
    module.write_text("x = 2\n")
    second = source_fingerprint(tmp_path)
    assert second != first
    (tmp_path / "tests" / "data" / "dumps" / "1.0.0.json").write_text("[]")
    assert source_fingerprint(tmp_path) != second


def test_each_release_sends_every_provider_history_and_keeps_the_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sweep's runs send the whole corpus and the generated cross product (profiles too), even
    with a campaign's count in the environment, and the record keeps both summaries."""
    monkeypatch.setenv("HISTFIX_PROVIDER_GENERATED", "10")
    env = suite_env(100)
    assert env["HISTFIX_PROVIDER_SAMPLE"] == "all" and env["HISTFIX_FUZZ_EXAMPLES"] == "100"
    assert "HISTFIX_PROVIDER_GENERATED" not in env
    assert {"providers", "providers_generated"} <= set(KEPT)


def test_provider_mode_sends_the_whole_corpus_and_its_count_of_generated_histories() -> None:
    env = provider_env(7)
    assert env["HISTFIX_PROVIDER_SAMPLE"] == "all" and env["HISTFIX_PROVIDER_GENERATED"] == "7"


def test_provider_mode_resumes_only_the_same_count() -> None:
    recorded = {
        "1.0.0": {"fingerprint": "new", "generated": 7},
        "1.0.1": {"fingerprint": "new", "generated": 5},
    }
    assert pending(["1.0.0", "1.0.1"], recorded, "new", 7) == ["1.0.1"]
    assert pending(["1.0.0", "1.0.1"], recorded, "new") == []


def test_provider_records_keep_counts_and_only_the_profile_failures() -> None:
    summary = {
        "sample": "all",
        "selected": 2,
        "measured": ["case a", "case b"],  # every case's name: not kept
        "seconds": 3.0,
        "apis": {
            "bedrock": {
                "client": "BedrockConverseModel",
                "unavailable": None,
                "cases": 2,
                "seconds": 1.0,
                "stored": {"measured": 2, "accepted": 0, "not_accepted": {"case a": "x", "case b": "y"}},
                "profile": {"measured": 2, "accepted": 1, "not_accepted": {"case b": "rejected:bedrock.z"}},
                "any": {"measured": 2, "accepted": 2, "not_accepted": {}},
            }
        },
    }
    small = small_providers(summary)
    assert small is not None and "measured" not in small and small["selected"] == 2
    bedrock = small["apis"]["bedrock"]
    assert bedrock["stored"] == {"measured": 2, "accepted": 0}
    assert bedrock["profile"]["not_accepted"] == {"case b": "rejected:bedrock.z"}
    assert profile_counts({"providers": small}) == "corpus 3/4, generated 0/0"
    assert small_providers(None) is None


def test_prefix_records_keep_counts_and_only_the_profile_failures() -> None:
    summary = {
        "generated": "HISTFIX_PROVIDER_GENERATED=10",
        "prefixes": {
            "groq": {
                "client": "GroqModel",
                "unavailable": None,
                "cases": 2,
                "stored": {"measured": 2, "accepted": 0, "not_accepted": {"case a": "x", "case b": "y"}},
                "histfix": {"measured": 2, "accepted": 1, "not_accepted": {"case a": "x"}},
                "profile": {"measured": 2, "accepted": 1, "not_accepted": {"case b": "rejected:chat.z"}},
                "gen_histfix": {"measured": 1, "accepted": 0, "not_accepted": {"seed 1": "x"}},
                "gen_any": {"measured": 1, "accepted": 0, "not_accepted": {"seed 1": "rejected:chat.z"}},
            }
        },
    }
    small = small_prefixes(summary)
    assert small is not None and small["generated"] == "HISTFIX_PROVIDER_GENERATED=10"
    groq = small["prefixes"]["groq"]
    assert groq["client"] == "GroqModel" and groq["cases"] == 2
    assert groq["stored"] == {"measured": 2, "accepted": 0}
    assert groq["histfix"] == {"measured": 2, "accepted": 1}
    assert groq["gen_histfix"] == {"measured": 1, "accepted": 0}
    assert groq["profile"]["not_accepted"] == {"case b": "rejected:chat.z"}
    assert groq["gen_any"]["not_accepted"] == {"seed 1": "rejected:chat.z"}
    assert small_prefixes(None) is None


def test_the_release_independent_tests_are_the_noxfiles_list(tmp_path: Path) -> None:
    assert "tests/test_processes.py" in RELEASE_INDEPENDENT  # read from the real noxfile
    noxfile = tmp_path / "noxfile.py"
    noxfile.write_text(
        'import nox\nOTHER = ["x"]\nRELEASE_INDEPENDENT_TESTS: list[str] = ["tests/a", "tests/b.py"]\n'
    )
    assert noxfile_list("RELEASE_INDEPENDENT_TESTS", noxfile) == ("tests/a", "tests/b.py")
    with pytest.raises(LookupError, match="assigns no MISSING"):
        noxfile_list("MISSING", noxfile)
