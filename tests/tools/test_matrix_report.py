"""compat-matrix.md rendering: cells from recorded runs, and the sweep folded into release ranges."""

from __future__ import annotations

from typing import Any

from matrix_report import (
    PROVIDER_APIS,
    SCENARIOS,
    failure_lines,
    prefix_cell,
    prefix_section,
    profile_cell,
    profile_section,
    provider_section,
    render,
    short,
    sweep_profile_cell,
    sweep_profile_notes,
    sweep_profile_row,
    sweep_section,
    why_failing,
    wiring_cell,
)


def run(
    backend: str = "histfix", *, exitstatus: int = 0, wiring: str = "ProcessHistory", plain: str = "400 (x)"
) -> Any:
    """A `--record-outcome` record, as the sweep keeps it."""
    return {
        "backend": backend,
        "features": {"repair_messages": backend == "upstream"},
        "outcomes": {"passed": 10, "skipped": 1} if exitstatus == 0 else {"failed": 1, "passed": 9},
        "scenarios": {
            **{f"{s}, plain": plain for s in SCENARIOS},
            **{f"{s}, histfix": "ok (fine)" for s in SCENARIOS},
        },
        "facts": {
            "upstream repairs before each request": "no",
            "processor wiring": wiring,
            "history_processors=": "TypeError",
        },
        "failed": {} if exitstatus == 0 else {"tests/test_x.py::test_y": "UserError: no\n  more"},
        "exitstatus": exitstatus,
        "reason": "because",
    }


def entry(record: Any | None = None, *, installed: bool = True, error: str | None = None) -> Any:
    return {
        "installed": installed,
        "error": error,
        "run": record,
        "fingerprint": "abc",
        "swept_at": "2026-11-30",
        "seconds": 1.0,
    }


def test_short_drops_the_explanation() -> None:
    assert short("400 (call never answered)") == "400"
    assert short("UserError") == "UserError"


def test_wiring_cell() -> None:
    assert wiring_cell(run(wiring="history_processors=")) == "`history_processors=`"
    assert wiring_cell(run()) == "`ProcessHistory` (`history_processors=` TypeError)"
    assert wiring_cell({"facts": {}}) == "not measured"


def test_sweep_folds_consecutive_equal_releases_in_version_order() -> None:
    sweep = {
        "releases": {
            "1.10.0": entry(run()),
            "1.9.0": entry(run()),
            "1.2.0": entry(run()),
            "2.0.0": entry(run("upstream")),
            "2.1.0": entry(run()),
        }
    }
    lines = sweep_section(sweep)
    rows = [line for line in lines if line.startswith(("| 1", "| 2"))]
    assert [row.split(" | ")[:2] for row in rows] == [
        ["| 1.2.0 \N{EN DASH} 1.10.0", "3"],
        ["| 2.0.0", "1"],
        ["| 2.1.0", "1"],
    ]
    assert "**5 pass, 0 fail**" in lines[2]
    assert "400 · 400 · 400 · 400 | all ok |" in rows[0]


def test_sweep_lists_failures_with_their_tests_and_install_errors() -> None:
    sweep = {
        "releases": {
            "1.0.0": entry(run(exitstatus=1)),
            "1.0.1": entry(installed=False, error="no matching distribution"),
        }
    }
    lines = sweep_section(sweep)
    assert "**0 pass, 2 fail**" in lines[2]
    assert "- 1.0.0: 1 test fails (`tests/test_x.py::test_y`): UserError: no more" in lines
    assert "- 1.0.1: no matching distribution" in lines
    assert any(line.startswith("| 1.0.1 | 1 | **did not install** |") for line in lines)


def test_without_a_sweep_the_matrix_says_so() -> None:
    text = render(["1.0.0"], {"1.0.0": run()}, None)
    assert (
        "| 1.0.0 | no | no | `ProcessHistory` (`history_processors=` TypeError) | histfix | pass (10 passed, 1 skipped) |"
        in text
    )
    assert "Not swept yet: run `nox -s sweep`." in text
    assert "- 1.0.0: because" in text


def test_a_failing_pinned_release_lists_its_tests() -> None:
    text = render(["1.0.0"], {"1.0.0": run(exitstatus=1)}, None)
    assert "| **FAIL** (1 failed, 9 passed) |" in text
    assert "- 1.0.0: 1 test fails (`tests/test_x.py::test_y`): UserError: no more" in text


def test_failures_fold_parametrized_cases_and_adjacent_releases() -> None:
    failed = {"t.py::a[1]": "E: x", "t.py::a[2]": "E: x", "t.py::b": "E: x", "t.py::c": "F: y"}
    reason = why_failing(None, failed)
    assert reason == "3 tests fail (`t.py::a` (2 cases), `t.py::b`): E: x; 1 test fails (`t.py::c`): F: y"
    order = ["1.0.0", "1.1.0", "1.2.0", "1.3.0"]
    lines = failure_lines({"1.0.0": "r", "1.1.0": "r", "1.3.0": "r", "1.2.0": "other"}, order)
    assert lines == ["- 1.0.0 \N{EN DASH} 1.1.0, 1.3.0: r", "- 1.2.0: other"]


def test_sweep_rows_fold_differing_counts_into_ranges() -> None:
    more = run()
    more["outcomes"] = {"passed": 11, "skipped": 1}
    lines = sweep_section({"releases": {"1.0.0": entry(run()), "1.0.1": entry(more)}})
    row = next(line for line in lines if line.startswith("| 1.0.0"))
    assert row.startswith("| 1.0.0 \N{EN DASH} 1.0.1 | 2 | pass (10\N{EN DASH}11 passed, 1 skipped) |")


def providers(stored: int, fixed: int, rejected: dict[str, str], measured: list[str]) -> Any:
    """A record's `providers` summary with one API measured (openai-chat), the rest unavailable."""
    apis: dict[str, Any] = {api: {"unavailable": "no SDK"} for api in PROVIDER_APIS}
    apis["openai-chat"] = {
        "unavailable": None,
        "stored": {"measured": len(measured), "accepted": stored, "not_accepted": {}},
        "histfix": {"measured": len(measured), "accepted": fixed, "not_accepted": rejected},
    }
    return {"sample": "all", "measured": measured, "apis": apis}


def test_provider_section_counts_and_names_what_still_fails_where() -> None:
    old = {**run(), "providers": providers(1, 2, {"b": "rejected:openai-chat.x"}, ["a", "b", "c"])}
    new = {**run(), "providers": providers(2, 3, {}, ["a", "b", "c"])}
    unmeasured = run()  # a run without tests/profiles/test_provider_truth.py: no row, not an empty one
    text = "\n".join(
        provider_section(["1.0.0", "2.0.0", "3.0.0"], {"1.0.0": old, "2.0.0": new, "3.0.0": unmeasured})
    )
    assert "| 1.0.0 | 3 (all) | 1/3 \N{RIGHTWARDS ARROW} 2/3 | unavailable |" in text
    assert "| 2.0.0 | 3 (all) | 2/3 \N{RIGHTWARDS ARROW} 3/3 |" in text
    assert "| 3.0.0 |" not in text
    assert "  - `openai-chat.x`: b (1.0.0)" in text  # stopped on 1.0.0 only: the release is named
    assert "- **anthropic**: none" in text


def test_provider_section_without_measurements_says_so() -> None:
    assert "Not measured." in provider_section(["1.0.0"], {"1.0.0": run()})


def counts(accepted: int, measured: int, rejected: dict[str, str] | None = None) -> Any:
    return {"measured": measured, "accepted": accepted, "not_accepted": rejected or {}}


def profiled(
    profile: Any, any_: Any, gen_profile: Any | None = None, gen_any: Any | None = None, refused: int = 0
) -> Any:
    """A record whose truth summary has the profile ways for openai-chat (the rest unavailable) and,
    when given, the generated histories' counts."""
    record = {**run(), "providers": providers(1, 2, {}, ["a", "b", "c"])}
    record["providers"]["apis"]["openai-chat"].update({"profile": profile, "any": any_})
    if gen_profile is not None:
        apis: dict[str, Any] = {api: {"unavailable": "no SDK"} for api in PROVIDER_APIS}
        apis["openai-chat"] = {"unavailable": None, "profile": gen_profile, "any": gen_any}
        record["providers_generated"] = {
            "sample": "default",
            "histories": 36,
            "refused": [str(n) for n in range(refused)],
            "apis": apis,
        }
    return record


def test_profile_cell_shows_both_ways_on_the_corpus_and_the_generated_histories() -> None:
    record = profiled(counts(3, 3), counts(2, 3), counts(35, 35), counts(34, 35))
    assert profile_cell(record, "openai-chat") == "3/3 \N{MIDDLE DOT} 2/3; gen 35/35 \N{MIDDLE DOT} 34/35"
    assert profile_cell(record, "anthropic") == "unavailable"
    corpus_only = profiled(counts(3, 3), counts(3, 3))
    assert profile_cell(corpus_only, "openai-chat") == "3/3 \N{MIDDLE DOT} 3/3"


def test_a_record_before_profiles_reads_not_measured() -> None:
    old = {**run(), "providers": providers(1, 2, {}, ["a", "b", "c"])}  # no profile ways, no generated
    assert profile_section(["1.0.0"], {"1.0.0": old})[-2] == "Not measured."
    assert sweep_profile_cell(old) == "not measured"
    assert sweep_profile_cell(run()) == "not measured"


def test_profile_section_names_what_stops_a_profile_where() -> None:
    stopped = {f"{n}": "rejected:openai-chat.y" for n in range(5)}
    bad = profiled(
        counts(2, 3, {"b": "rejected:openai-chat.x"}),
        counts(1, 3, {"b": "rejected:openai-chat.x", "c": "raised:UserError"}),
        counts(31, 36, stopped),
        counts(36, 36),
        refused=1,
    )
    good = profiled(counts(3, 3), counts(3, 3), counts(36, 36), counts(36, 36))
    text = "\n".join(profile_section(["1.0.0", "2.0.0"], {"1.0.0": bad, "2.0.0": good}))
    assert (
        "| 1.0.0 | 3 | 36 (default, 1 refused) | 2/3 \N{MIDDLE DOT} 1/3; gen 31/36 \N{MIDDLE DOT} 36/36 |"
        in text
    )
    assert "| 2.0.0 | 3 | 36 (default) | 3/3 \N{MIDDLE DOT} 3/3; gen 36/36 \N{MIDDLE DOT} 36/36 |" in text
    assert "  - 1.0.0:" in text and "  - 2.0.0:" not in text
    assert "    - `openai-chat.x`: b" in text  # both ways: no way named
    assert "    - `UserError`: c (any)" in text
    assert "    - `openai-chat.y`: 5 generated (seeds 0, 1, 2, \N{HORIZONTAL ELLIPSIS})" in text
    assert "- **anthropic**: none" in text
    assert "### Provider profiles" in render(["1.0.0"], {"1.0.0": bad}, None)


def test_sweep_rows_show_the_profiles_and_fold_equal_ones() -> None:
    good = profiled(counts(3, 3), counts(3, 3), counts(500, 500), counts(500, 500))
    also_good = profiled(counts(3, 3), counts(3, 3), counts(499, 499), counts(499, 499))
    bad = profiled(
        counts(3, 3), counts(2, 3, {"b": "rejected:openai-chat.x"}), counts(500, 500), counts(500, 500)
    )
    assert sweep_profile_cell(good) == "all accepted (corpus + generated)"
    assert sweep_profile_cell(bad) == "1 not accepted (corpus + generated): `openai-chat.x`"
    lines = sweep_section(
        {"releases": {"1.0.0": entry(good), "1.0.1": entry(also_good), "1.0.2": entry(bad)}}
    )
    rows = [line for line in lines if line.startswith("| 1.0")]
    assert rows[0].startswith("| 1.0.0 \N{EN DASH} 1.0.1 | 2 |")
    assert rows[0].endswith("| all accepted (corpus + generated) |")
    assert rows[1].endswith("| 1 not accepted (corpus + generated): `openai-chat.x` |")


def swept(record: Any) -> Any:
    """A provider sweep entry as tools/sweep.py --providers keeps it."""
    return {**entry(record), "generated": 36}


def test_the_provider_sweep_is_a_row_of_the_profile_table() -> None:
    good = profiled(counts(3, 3), counts(3, 3), counts(36, 36), counts(36, 36))
    record = {"on_pypi": 3, "releases": {"1.0.0": swept(good), "1.0.1": swept(good)}}
    row = sweep_profile_row(record)
    assert row is not None
    assert row[:3] == ["sweep (2 releases)", "0 (all)", "36 (all)"]
    # openai-chat: both ways on the corpus (3 + 3) and the generated histories (36 + 36)
    assert row[3] == "2/2 releases, 78/78 each"
    assert row[4] == "0/2 releases, 0/0 each"  # anthropic unavailable in these records
    text = "\n".join(profile_section(["1.0.0"], {"1.0.0": good}, record))
    assert "| sweep (2 releases) | 0 (all) | 36 (all) | 2/2 releases, 78/78 each |" in text
    assert "on 2 releases of the 3 on PyPI (1.0.0 to 1.0.1)" in text
    assert "Not accepted in the sweep" not in text


def test_the_provider_sweep_lists_each_release_case_and_api_not_accepted() -> None:
    good = profiled(counts(3, 3), counts(3, 3), counts(36, 36), counts(36, 36))
    bad = profiled(
        counts(3, 3),
        counts(2, 3, {"b": "rejected:openai-chat.x"}),
        counts(35, 36, {"7": "raised:E"}),
        counts(36, 36),
    )
    failing = {
        **bad,
        "exitstatus": 1,
        "failed": {"tests/profiles/test_provider_truth.py::test_provider_truth[b]": "no"},
    }
    record = {"releases": {"1.0.0": swept(good), "1.0.2": swept(failing)}}
    row = sweep_profile_row(record)
    assert row is not None and row[3] == "1/2 releases, 2 not accepted"
    notes = sweep_profile_notes(record)
    assert "- 1.0.2, b, openai-chat (any): `rejected:openai-chat.x`" in notes
    assert "- 1.0.2, seed 7, openai-chat (profile): `raised:E`" in notes
    assert any(line.startswith("- 1.0.2: the provider tests fail: 1 test fails") for line in notes)
    assert sweep_profile_row(None) is None and sweep_profile_notes({"releases": {}})[0].startswith(
        "*sweep*: not"
    )


def prefixed(profile: Any, any_: Any) -> Any:
    """A record with tests/profiles/test_provider_prefixes.py's summary: groq measured, huggingface unavailable."""
    return {
        **run(),
        "providers_prefixes": {
            "sample": "all",
            "prefixes": {
                "groq": {
                    "client": "GroqModel",
                    "unavailable": None,
                    "cases": 3,
                    "stored": counts(1, 3),
                    "histfix": counts(2, 3),
                    "profile": profile,
                    "any": any_,
                },
                "huggingface": {"client": None, "unavailable": "no SDK", "cases": 0},
            },
        },
    }


def test_prefix_section_shows_each_model_class_and_what_stops_a_profile() -> None:
    good = prefixed(counts(3, 3), counts(3, 3))
    bad = prefixed(counts(2, 3, {"b": "rejected:openai-chat.x"}), counts(3, 3))
    text = "\n".join(prefix_section(["1.0.0", "2.0.0"], {"1.0.0": bad, "2.0.0": good}))
    assert "| 2.0.0 | 1/3 \N{RIGHTWARDS ARROW} 2/3; 3/3 \N{MIDDLE DOT} 3/3 | unavailable |" in text
    assert "| 1.0.0 | 1/3 \N{RIGHTWARDS ARROW} 2/3; 2/3 \N{MIDDLE DOT} 3/3 | unavailable |" in text
    assert "- 1.0.0 groq: `openai-chat.x`: b" in text
    generated = {**good, "providers_prefixes": {**good["providers_prefixes"]}}
    generated["providers_prefixes"]["prefixes"] = {
        "groq": {
            **good["providers_prefixes"]["prefixes"]["groq"],
            "gen_profile": counts(6, 7, {"9": "rejected:openai-chat.y"}),
            "gen_any": counts(7, 7),
        }
    }
    assert prefix_cell(generated, "groq").endswith("; gen 6/7 \N{MIDDLE DOT} 7/7")
    assert "- 2.0.0 groq: `openai-chat.y`: 9" in "\n".join(prefix_section(["2.0.0"], {"2.0.0": generated}))
    assert "none." not in text
    assert "none." in "\n".join(prefix_section(["2.0.0"], {"2.0.0": good}))


def test_a_record_without_prefixes_adds_no_section() -> None:
    assert prefix_section(["1.0.0"], {"1.0.0": run()}) == []
