"""The one list of release switches: every declared switch is detected, and detected on the real release."""

from __future__ import annotations

from packaging.version import Version
from pydantic_ai import messages as pai

from histfix._release import switches as _compat
from histfix._release.backend import UPSTREAM_CURRENT_SINCE
from histfix._release.detect import features, switches
from histfix._release.switches import DETECTED

from conftest import HAS_UPSTREAM_REPAIR, PYDANTIC_AI


def test_every_declared_switch_is_detected_and_exported() -> None:
    assert set(switches()) == DETECTED
    assert set(_compat.__all__) >= DETECTED
    for name in _compat.__all__:
        assert getattr(_compat, name) is not None or name == "TOOL_AVAILABILITY_DELTA"


def test_switches_agree_with_the_installed_release() -> None:
    assert _compat.HAS_REPAIR_MESSAGES is HAS_UPSTREAM_REPAIR
    assert _compat.UPSTREAM_REPAIR_IS_CURRENT is (
        HAS_UPSTREAM_REPAIR and PYDANTIC_AI >= UPSTREAM_CURRENT_SINCE
    )
    assert _compat.TOOL_AVAILABILITY_DELTA is getattr(pai, "ToolAvailabilityDeltaPart", None)
    assert _compat.HAS_RETRY_FEEDBACK_PART is hasattr(pai, "RetryFeedbackPart")
    assert features()["repair_messages"] is HAS_UPSTREAM_REPAIR
    # releases from upstream-behaviour.md; detected by probe, so on every Python (3.10 included)
    assert _compat.OUTCOME_INTERRUPTED is (Version("2.10.0") <= PYDANTIC_AI)
    assert _compat.OUTCOME_RETRIED is (Version("2.60.0") <= PYDANTIC_AI)
    assert _compat.RETURN_HAS_OUTCOME is (Version("1.67.0") <= PYDANTIC_AI)
