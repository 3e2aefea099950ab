"""The one list of release switches: every declared switch is detected, and detected on the real release."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from packaging.version import Version
from pydantic_ai import messages as pai

from histfix._release import installed as _release
from histfix._release import switches as _compat
from histfix._release.backend import UPSTREAM_CURRENT_SINCE
from histfix._release.detect import features, switches
from histfix._release.switches import DETECTED

from conftest import HAS_UPSTREAM_REPAIR, PYDANTIC_AI, mistral_profile_fits_ids


def test_every_declared_switch_is_detected_and_exported() -> None:
    assert set(switches()) == DETECTED
    assert set(_compat.__all__) >= DETECTED
    for name, value in switches().items():
        if name == "TOOL_AVAILABILITY_DELTA":
            assert value is None or isinstance(value, type)
        else:  # a bool, not something truthy: callers test them with `is`
            assert type(value) is bool, name
        assert getattr(_compat, name) is value, name
    for name in sorted(set(_compat.__all__) - DETECTED):
        value = getattr(_compat, name)
        if name.endswith("_SINCE"):
            assert isinstance(value, Version), name
        elif name.isupper():  # a release range: [first, first not)
            low, high = value
            assert isinstance(low, Version) and isinstance(high, Version) and low < high, name
        else:
            assert callable(value), name


def test_switches_agree_with_the_installed_release() -> None:
    assert _compat.HAS_REPAIR_MESSAGES is HAS_UPSTREAM_REPAIR
    assert _compat.UPSTREAM_REPAIR_IS_CURRENT is (
        HAS_UPSTREAM_REPAIR and Version(UPSTREAM_CURRENT_SINCE) <= PYDANTIC_AI
    )
    assert _compat.TOOL_AVAILABILITY_DELTA is getattr(pai, "ToolAvailabilityDeltaPart", None)
    assert _compat.HAS_RETRY_FEEDBACK_PART is hasattr(pai, "RetryFeedbackPart")
    assert features()["repair_messages"] is HAS_UPSTREAM_REPAIR
    # releases from upstream-behaviour.md; detected by probe, so on every Python (3.10 included)
    assert _compat.OUTCOME_INTERRUPTED is (Version("2.10.0") <= PYDANTIC_AI)
    assert _compat.OUTCOME_RETRIED is (Version("2.60.0") <= PYDANTIC_AI)
    assert _compat.RETURN_HAS_OUTCOME is (Version("1.67.0") <= PYDANTIC_AI)
    assert _compat.RETURN_HAS_TOOL_KIND is (Version("1.95.0") <= PYDANTIC_AI)
    assert _compat.RETURN_HAS_UI_VISIBILITY is (Version("2.78.0") <= PYDANTIC_AI)
    assert _compat.REQUEST_HAS_TIMESTAMP is (Version("1.38.0") <= PYDANTIC_AI)
    assert _compat.REQUEST_HAS_METADATA is (Version("1.20.0") <= PYDANTIC_AI)
    assert _compat.HAS_CONVERSATION_STORE is _imports("pydantic_ai.conversation_store", "ConversationStore")
    # behaviour, asked of the release itself
    assert _compat.ARGS_AS_DICT_TOLERATES_INVALID is _args_as_dict_tolerates_invalid()
    assert _compat.PROFILE_FITS_TOOL_CALL_IDS is mistral_profile_fits_ids()


def test_features_name_the_detected_switches() -> None:
    assert features() == {
        "repair_messages": _compat.HAS_REPAIR_MESSAGES,
        "upstream_repair_is_current": _compat.UPSTREAM_REPAIR_IS_CURRENT,
        "tool_return_outcome": _compat.RETURN_HAS_OUTCOME,
        "outcome_interrupted": _compat.OUTCOME_INTERRUPTED,
        "tool_return_tool_kind": _compat.RETURN_HAS_TOOL_KIND,
        "tool_return_ui_visibility": _compat.RETURN_HAS_UI_VISIBILITY,
        "request_timestamp": _compat.REQUEST_HAS_TIMESTAMP,
        "request_metadata": _compat.REQUEST_HAS_METADATA,
        "tool_availability_delta_part": _compat.TOOL_AVAILABILITY_DELTA is not None,
        "retry_feedback_part": _compat.HAS_RETRY_FEEDBACK_PART,
        "outcome_retried": _compat.OUTCOME_RETRIED,
    }


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


#: The switches compared by release number, at the releases on either side of each boundary (from
#: upstream-behaviour.md and the wheels the switch list names), well past it (2.68.0), and with no PEP
#: 440 version (None).
BY_RELEASE: list[tuple[str, list[tuple[str | None, object]]]] = [
    (
        "openai_prefix_api",
        [
            ("1.107.10", "openai-chat"),
            ("2.0.0", "openai-responses"),
            ("2.68.0", "openai-responses"),
            (None, "openai-responses"),
        ],
    ),
    ("native_return_named_by_tool", [("1.0.8", False), ("1.0.9", True), ("2.68.0", True), (None, True)]),
    ("bedrock_skips_response_files", [("1.79.0", False), ("1.80.0", True), ("2.68.0", True), (None, True)]),
    ("bedrock_sends_only_own_thinking", [("1.0.2", False), ("1.0.3", True), ("2.68.0", True), (None, True)]),
    ("thinking_sent", [("1.0.2", False), ("1.0.3", True), ("2.68.0", True), (None, True)]),
    (
        "responses_reasoning_items",
        [
            ("1.0.0", "none"),
            ("1.0.2", "none"),
            ("1.0.3", "every"),
            ("1.0.4", "every"),
            ("1.0.5", "own"),
            ("2.68.0", "own"),
            (None, "own"),
        ],
    ),
    ("responses_native_calls_sent", [("1.0.8", False), ("1.0.9", True), ("2.68.0", True), (None, True)]),
    (
        "agent_refuses_response_first",
        [
            ("1.20.0", False),
            ("1.21.0", True),
            ("1.21.1", True),
            ("1.22.0", False),
            ("2.68.0", False),
            (None, False),
        ],
    ),
    (
        "instructions_at_system_count",
        [
            ("1.32.0", False),
            ("1.33.0", True),
            ("1.74.9", True),
            ("1.75.0", False),
            ("2.68.0", False),
            (None, False),
        ],
    ),
    (
        "run_repair_adds_surplus_results",
        [
            ("2.9.1", False),
            ("2.10.0", True),
            ("2.54.9", True),
            ("2.55.0", False),
            ("2.68.0", False),
            (None, False),
        ],
    ),
]


@pytest.mark.parametrize(("name", "table"), BY_RELEASE, ids=[name for name, _ in BY_RELEASE])
def test_release_compared_switches_flip_at_their_release(
    name: str, table: list[tuple[str | None, object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    switch = getattr(_compat, name)
    for release, expected in table:
        monkeypatch.setattr(_release, "VERSION", None if release is None else Version(release))
        assert switch() == expected, (name, release)


def test_upstream_repair_is_current_needs_repair_messages_and_a_release_from_the_current_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The detection itself (uncached) on the installed messages module, as if it were each release."""
    from histfix._release import detect as _detect

    cases = (("2.59.0", False), ("2.68.0", False), ("2.78.0rc1", False), ("2.78.0", True), ("weird", False))
    for release, current in cases:
        monkeypatch.setattr(_detect, "VERSION_STRING", release)
        detected = _detect.switches.__wrapped__()
        assert detected["UPSTREAM_REPAIR_IS_CURRENT"] is (HAS_UPSTREAM_REPAIR and current), release
        assert detected["HAS_REPAIR_MESSAGES"] is HAS_UPSTREAM_REPAIR


def test_a_switch_is_detected_on_first_access_and_no_other_name_is_invented() -> None:
    """The module's PEP 562 hook itself: a harness that touched the module first would hide it."""
    assert _compat.__getattr__("HAS_REPAIR_MESSAGES") is HAS_UPSTREAM_REPAIR
    with pytest.raises(AttributeError, match="has no attribute 'NO_SUCH_SWITCH'"):
        _compat.__getattr__("NO_SUCH_SWITCH")


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
