"""The release table and the one question asked of it: every entry detected or compared as it
says, on the real release, and the caches it keeps in sight."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from packaging.version import Version
from pydantic_ai import messages as pai

from histfix._release import installed as _release
from histfix._release import switches, table
from histfix._release.backend import upstream_is_current
from histfix._release.detect import FIELDS, detected
from histfix._release.switches import features, has, holds

from conftest import HAS_UPSTREAM_REPAIR, PYDANTIC_AI, mistral_profile_fits_ids

DETECTED = {note.name for note in table.NOTES if note.how == "detected"}


def test_every_entry_is_named_once_says_how_and_orders_its_releases() -> None:
    names = [note.name for note in table.NOTES]
    assert len(names) == len(set(names))
    for note in table.NOTES:
        assert getattr(table, note.name) is note, note  # the constant is the entry of its own name
        assert note.how in ("detected", "compared", "noted") and note.what, note
        assert Version(note.release) >= Version("1.0.0"), note
        assert not note.until or Version(note.until) > Version(note.release), note
        assert note.link.endswith(f"/v{note.release}"), note
    assert tuple(sorted(table.REPAIR_FIXES, key=lambda note: Version(note.release))) == table.REPAIR_FIXES
    assert table.UPSTREAM_REPAIR_CURRENT.release == table.REPAIR_FIXES[-1].release
    assert all(fix.before for fix in table.REPAIR_FIXES)  # the backend's reasons quote them


def test_every_detected_entry_is_detected_and_nothing_else() -> None:
    assert set(detected()) == DETECTED
    for name, value in detected().items():
        if name == "TOOL_AVAILABILITY_DELTA":
            assert value is None or isinstance(value, type)
        else:  # a bool, not something truthy
            assert type(value) is bool, name


def test_a_field_entry_detects_the_field_it_names_and_no_other_entry_does() -> None:
    """An entry is its own documentation: what it says is what is detected (ModelRequest.metadata and
    .timestamp arrive together on every pinned release, so only this tells their detections apart)."""
    assert len(set(FIELDS.values())) == len(FIELDS)
    for note, (cls, field) in FIELDS.items():
        assert note.how == "detected" and note.what.partition(",")[0] == f"{cls}.{field}", note


def test_switches_agree_with_the_installed_release() -> None:
    assert has(table.REPAIR_MESSAGES) is HAS_UPSTREAM_REPAIR
    assert switches.upstream_repair_is_current() is (HAS_UPSTREAM_REPAIR and Version("2.78.0") <= PYDANTIC_AI)
    assert switches.delta_part() is getattr(pai, "ToolAvailabilityDeltaPart", None)
    assert has(table.RETRY_FEEDBACK_PART) is hasattr(pai, "RetryFeedbackPart")
    # releases from upstream-behaviour.md; detected by probe, so on every Python (3.10 included)
    assert has(table.OUTCOME_INTERRUPTED) is (Version("2.10.0") <= PYDANTIC_AI)
    assert has(table.OUTCOME_RETRIED) is (Version("2.60.0") <= PYDANTIC_AI)
    assert has(table.RETURN_OUTCOME) is (Version("1.67.0") <= PYDANTIC_AI)
    assert has(table.RETURN_TOOL_KIND) is (Version("1.95.0") <= PYDANTIC_AI)
    assert has(table.RETURN_UI_VISIBILITY) is (Version("2.78.0") <= PYDANTIC_AI)
    assert has(table.REQUEST_TIMESTAMP) is (Version("1.38.0") <= PYDANTIC_AI)
    assert has(table.REQUEST_METADATA) is (Version("1.20.0") <= PYDANTIC_AI)
    assert has(table.CONVERSATION_STORE) is _imports("pydantic_ai.conversation_store", "ConversationStore")
    # behaviour, asked of the release itself
    assert has(table.ARGS_AS_DICT_TOLERATES_INVALID) is _args_as_dict_tolerates_invalid()
    assert has(table.PROFILE_FITS_TOOL_CALL_IDS) is mistral_profile_fits_ids()


def test_features_name_the_detected_switches() -> None:
    assert features() == {
        "repair_messages": has(table.REPAIR_MESSAGES),
        "upstream_repair_is_current": switches.upstream_repair_is_current(),
        "tool_return_outcome": has(table.RETURN_OUTCOME),
        "outcome_interrupted": has(table.OUTCOME_INTERRUPTED),
        "tool_return_tool_kind": has(table.RETURN_TOOL_KIND),
        "tool_return_ui_visibility": has(table.RETURN_UI_VISIBILITY),
        "request_timestamp": has(table.REQUEST_TIMESTAMP),
        "request_metadata": has(table.REQUEST_METADATA),
        "tool_availability_delta_part": switches.delta_part() is not None,
        "retry_feedback_part": has(table.RETRY_FEEDBACK_PART),
        "outcome_retried": has(table.OUTCOME_RETRIED),
    }


def test_the_run_adds_surplus_results_from_its_first_repair_up_to_fifo_matching() -> None:
    """2.10.0-2.54.x: the run repairs by a dict; before 2.10.0 nothing repairs, from 2.55.0 FIFO."""
    expected = Version("2.10.0") <= PYDANTIC_AI < Version("2.55.0")
    assert switches.run_adds_surplus_results() is expected


def test_a_noted_entry_is_no_switch_and_asking_it_is_refused() -> None:
    """A noted entry meets the same repair on every release: asking whether a release has it is a
    caller's mistake, said as a ValueError, not a KeyError from the detection or an answer."""
    noted = [note for note in table.NOTES if note.how == "noted"]
    assert noted
    for note in noted:
        with pytest.raises(ValueError, match="noted, not switched on"):
            has(note)


def test_the_installed_engine_is_the_backend_rules_answer_for_the_installed_release() -> None:
    expected = "upstream" if HAS_UPSTREAM_REPAIR and Version("2.78.0") <= PYDANTIC_AI else "histfix"
    assert switches.installed_engine() == expected


@pytest.mark.parametrize(
    ("first", "until", "written"),
    [
        (table.OLDEST, table.THINKING_SENT.release, "1.0.0-1.0.2"),
        ("1.0.0", "1.0.4", "1.0.0-1.0.3"),
        (table.AGENT_REFUSES_RESPONSE_FIRST.release, table.AGENT_REFUSES_RESPONSE_FIRST.until, "1.21.x"),
        (
            table.INSTRUCTIONS_AT_SYSTEM_COUNT.release,
            table.INSTRUCTIONS_AT_SYSTEM_COUNT.until,
            "1.33.0-1.74.x",
        ),
    ],
)
def test_a_span_of_releases_is_written_as_a_person_writes_it(first: str, until: str, written: str) -> None:
    """The rule texts and the docs quote ranges through ``span``: the last release before ``until``
    (a patch back, or ``.x`` of the minor before), and one minor's releases as ``1.21.x``."""
    assert table.span(first, until) == written


def test_an_entry_says_how_it_is_told_by_keyword() -> None:
    """Every entry reads ``how="compared"``: a bare fourth string is refused, not taken as ``how``."""
    with pytest.raises(TypeError):
        table.Note("SOME_CHANGE", "1.0.0", "what changed", "compared")


def _imports(module: str, name: str) -> bool:
    """Whether ``from module import name`` works on the installed release (presence, as imported)."""
    try:
        return hasattr(importlib.import_module(module), name)
    except ImportError:
        return False


def _args_as_dict_tolerates_invalid() -> bool:
    truncated = pai.ToolCallPart(tool_name="f", args='{"q": 1', tool_call_id="c")
    try:
        truncated.args_as_dict()
    except ValueError:
        return False
    return True


#: The entries compared by release number, at the releases on either side of each boundary (from
#: upstream-behaviour.md and the wheels the table names), well past it (2.68.0), and with no PEP 440
#: version (the newest release's answer).
BY_RELEASE: list[tuple[table.Note, list[tuple[str, bool]]]] = [
    (
        table.OPENAI_PREFIX_IS_RESPONSES,
        [("1.107.10", False), ("2.0.0", True), ("2.68.0", True), ("weird", True)],
    ),
    (
        table.NATIVE_RETURN_NAMED_BY_TOOL,
        [("1.0.8", False), ("1.0.9", True), ("2.68.0", True), ("weird", True)],
    ),
    (
        table.BEDROCK_SKIPS_RESPONSE_FILES,
        [("1.79.0", False), ("1.80.0", True), ("2.68.0", True), ("weird", True)],
    ),
    (
        table.BEDROCK_SENDS_ONLY_OWN_THINKING,
        [("1.0.2", False), ("1.0.3", True), ("2.68.0", True), ("weird", True)],
    ),
    (table.THINKING_SENT, [("1.0.2", False), ("1.0.3", True), ("2.68.0", True), ("weird", True)]),
    (
        table.RESPONSES_REASONING_OWN_ONLY,
        [("1.0.4", False), ("1.0.5", True), ("2.68.0", True), ("weird", True)],
    ),
    (
        table.RESPONSES_NATIVE_CALLS_SENT,
        [("1.0.8", False), ("1.0.9", True), ("2.68.0", True), ("weird", True)],
    ),
    (table.FRAMING_ANNOUNCED, [("2.62.0", False), ("2.63.0", True), ("2.78.0", True), ("weird", True)]),
    (table.RESULTS_SENT_FIRST, [("2.66.0", False), ("2.68.0", True), ("2.78.0", True), ("weird", True)]),
    (
        table.AGENT_REFUSES_RESPONSE_FIRST,
        [
            ("1.20.0", False),
            ("1.21.0", True),
            ("1.21.1", True),
            ("1.22.0", False),
            ("2.68.0", False),
            ("weird", False),
        ],
    ),
    (
        table.INSTRUCTIONS_AT_SYSTEM_COUNT,
        [
            ("1.32.0", False),
            ("1.33.0", True),
            ("1.74.9", True),
            ("1.75.0", False),
            ("2.68.0", False),
            ("weird", False),
        ],
    ),
    (table.RUN_REPAIRS_HISTORY, [("2.9.1", False), ("2.10.0", True), ("2.68.0", True), ("weird", True)]),
    (table.REPAIR_MATCHES_FIFO, [("2.54.9", False), ("2.55.0", True), ("2.68.0", True), ("weird", True)]),
    (
        table.UPSTREAM_REPAIR_CURRENT,
        [("2.68.0", False), ("2.78.0rc1", False), ("2.78.0", True), ("weird", True)],
    ),
]


@pytest.mark.parametrize(("note", "table_"), BY_RELEASE, ids=[note.name for note, _ in BY_RELEASE])
def test_compared_entries_flip_at_their_release(note: table.Note, table_: list[tuple[str, bool]]) -> None:
    assert note.how == "compared"
    for release, expected in table_:
        assert holds(note, release) is expected, (note, release)


def test_every_compared_entry_is_pinned_above() -> None:
    compared = {note.name for note in table.NOTES if note.how == "compared"} - {
        fix.name
        for fix in table.REPAIR_FIXES[1:]  # the backend's reasons, in test_api
    }
    assert compared == {note.name for note, _ in BY_RELEASE}


def test_the_upstream_repair_is_current_from_the_last_fix_with_repair_messages_only() -> None:
    """The backend rule itself: a pre-release or a version that is not PEP 440 counts as older."""
    cases = (("2.59.0", False), ("2.68.0", False), ("2.78.0rc1", False), ("2.78.0", True), ("weird", False))
    for release, current in cases:
        assert upstream_is_current(release, True) is current, release
        assert upstream_is_current(release, False) is False, release
    version = _release.current()[1]
    assert switches.upstream_repair_is_current() is upstream_is_current(version, HAS_UPSTREAM_REPAIR)


def test_forget_reads_the_installed_release_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caches are in sight: what was read stays until ``forget``, then the next need reads anew."""
    version = _release.current()[1]
    monkeypatch.setattr(_release, "installed_release", lambda: ("pydantic-ai-slim", "1.0.2"))
    assert _release.current()[1] == version  # kept
    switches.forget()
    try:
        assert _release.current() == ("pydantic-ai-slim", "1.0.2")
        assert has(table.THINKING_SENT) is False  # compared with the release read now
    finally:
        monkeypatch.undo()
        switches.forget()
    assert _release.current()[1] == version


def test_pydantic_ai_installed_after_histfix_was_used_is_read_when_first_needed() -> None:
    """Nothing is read at import, and "none installed" is not kept: a process that finds pydantic-ai
    only later (here: its folder joins sys.path after a first call failed) repairs with it."""
    src = str(Path(__file__).parents[2] / "src")
    site = sysconfig.get_paths()["purelib"]
    script = (
        "import sys\n"
        "import histfix\n"
        "try:\n"
        "    histfix.repair([])\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('pydantic-ai was importable already')\n"
        f"sys.path.append({site!r})\n"
        "info = histfix.backend_info()\n"
        "print(info.distribution, info.version)\n"
    )
    found = subprocess.run(
        [sys.executable, "-S", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "PYTHONPATH": src},
    )
    assert found.stdout.split() == list(_release.current()), found.stderr


@pytest.mark.parametrize("distribution", ["pydantic-ai-slim", "pydantic", "packaging", "Pydantic_Core"])
def test_dist_info_version_is_what_importlib_metadata_finds(distribution: str) -> None:
    from importlib import metadata

    assert _release.dist_info_version(distribution) == metadata.version(distribution)


def test_dist_info_version_leaves_what_is_not_plain_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def dist(folder: Path, name: str, version: str) -> None:
        (folder / name).mkdir(parents=True)
        (folder / name / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: x\nVersion: {version}\n\nVersion: 0\n"
        )

    plain, doubled, egg = tmp_path / "plain", tmp_path / "doubled", tmp_path / "egg"
    dist(plain, "some_thing-1.2.dist-info", "1.2.post1")
    dist(doubled, "some_thing-1.2.dist-info", "1.2")
    dist(doubled, "Some.Thing-1.3.dist-info", "1.3")
    dist(egg, "some_thing-1.2.dist-info", "1.2")
    dist(egg, "Some_Thing-1.1.egg-info", "1.1")
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))
    for path, expected in (
        ([str(tmp_path / "missing"), str(plain)], "1.2.post1"),  # the METADATA's version, not the folder's
        ([str(doubled), str(plain)], None),
        ([str(egg), str(plain)], None),
        ([str(archive), str(plain)], None),
        ([str(tmp_path / "missing")], None),
    ):
        monkeypatch.setattr(sys, "path", path)
        assert _release.dist_info_version("Some-Thing") == expected, path
