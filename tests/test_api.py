"""The public surface: arguments, errors a user can act on, backend choice (the lazy import, in a
fresh process: tests/test_processes.py)."""

from __future__ import annotations

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._release.switches import upstream_repair_is_current

from conftest import HAS_UPSTREAM_REPAIR, PYDANTIC_AI
from dsl import call, load, req, resp, user

SEED = [
    req(user("test")),
    resp(call("retrieve_documents", "call_1", {"search_query": "test"})),
    req(user("test")),
]


def test_public_names_are_exactly_all() -> None:
    assert sorted(histfix.__all__) == sorted(
        [
            "Backend",
            "BackendInfo",
            "BudgetExceededError",
            "Change",
            "ChangeKind",
            "HistoryState",
            "HistoryStateKind",
            "Problem",
            "ProblemKind",
            "RepairProcessor",
            "RepairReport",
            "PROVIDER_APIS",
            "PROVIDER_NAMES",
            "STARTER_PROMPT",
            "SYNTHESIZED_CONTENT",
            "SYNTHESIZED_TOOL_RETURN_METADATA_KEY",
            "__version__",
            "agent_options",
            "backend_info",
            "check",
            "classify",
            "dump_json",
            "estimate_tokens",
            "is_provider_valid",
            "is_synthesized",
            "keep_last_turns",
            "load_json",
            "repair",
            "repair_report",
            "trim_to_budget",
        ]
    )
    for name in histfix.__all__:
        assert hasattr(histfix, name)
    # every public name is listed once, in histfix._public, and read from there: nothing is written
    # into the package, whose own names stay its version and its hooks
    from histfix import _public

    assert {name for name in vars(_public) if not name.startswith("_")} | {"__version__"} == set(
        histfix.__all__
    )
    for name in histfix.__all__:
        assert name == "__version__" or getattr(histfix, name) is getattr(_public, name)
    assert not set(vars(histfix)) & set(histfix.__all__) - {"__version__"}
    assert set(dir(histfix)) >= set(histfix.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        histfix.nothing_here  # noqa: B018


@pytest.mark.parametrize("bad", [None, "history", b"history", 42, {"kind": "request"}, iter([])])
def test_non_sequences_are_rejected(bad: object) -> None:
    with pytest.raises(TypeError, match=r"repair\(\) needs"):
        histfix.repair(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"keep_last_turns\(\) needs"):
        histfix.keep_last_turns(bad, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["histfix", "auto", *(["upstream"] if HAS_UPSTREAM_REPAIR else [])])
def test_wrong_element_names_index_and_type(backend: histfix.Backend) -> None:
    history = [*load(SEED), {"kind": "request", "parts": []}]
    with pytest.raises(TypeError, match=r"messages\[3\] is a builtins\.dict.*ModelMessagesTypeAdapter"):
        histfix.repair(history, backend=backend)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"messages\[0\] is a builtins\.str"):
        histfix.repair(["hello"], backend=backend)  # type: ignore[list-item]


def test_trim_wrong_element_names_index() -> None:
    with pytest.raises(TypeError, match=r"messages\[1\] is a builtins\.int"):
        histfix.keep_last_turns([*load(SEED)[:1], 7], 1)  # type: ignore[list-item]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="backend must be one of"):
        histfix.repair([], backend="fast")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="repair_last_response must be a bool"):
        histfix.repair([], repair_last_response="no")  # type: ignore[arg-type]
    for turns in (0, -1, 1.5, "2", True, None):
        with pytest.raises(ValueError, match="turns must be a positive int"):
            histfix.keep_last_turns([], turns)  # type: ignore[arg-type]


def test_returns_new_list_even_when_nothing_changes() -> None:
    for history in ([], load([req(user("hi"))])):
        for backend in ("auto", "histfix"):
            out = histfix.repair(history, backend=backend)  # type: ignore[arg-type]
            assert out == history
            assert out is not history
    assert histfix.repair((), backend="histfix") == []  # any sequence is accepted


def test_backend_info_matches_release() -> None:
    info = histfix.backend_info()
    assert info.version == str(PYDANTIC_AI)
    assert info.features["repair_messages"] is HAS_UPSTREAM_REPAIR
    expected = "upstream" if upstream_repair_is_current() else "histfix"
    assert info.backend == expected
    assert str(PYDANTIC_AI) in info.reason


def test_forcing_upstream() -> None:
    history = load(SEED)
    if HAS_UPSTREAM_REPAIR:
        assert histfix.repair(history, backend="upstream") == pai.repair_messages(history)  # type: ignore[attr-defined]
    else:
        with pytest.raises(RuntimeError, match=r"repair_messages.*arrived in 2\.53\.0"):
            histfix.repair(history, backend="upstream")


def test_environment_variable_forces_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HISTFIX_BACKEND", "histfix")
    assert histfix.backend_info().backend == "histfix"
    assert "forced by HISTFIX_BACKEND" in histfix.backend_info().reason
    monkeypatch.setenv("HISTFIX_BACKEND", "nonsense")
    with pytest.raises(ValueError, match="HISTFIX_BACKEND"):
        histfix.repair(load(SEED))


@pytest.mark.parametrize(
    ("version", "current"),
    [
        ("2.78.0", True),
        ("3.4.0", True),
        ("2.78.0+local", True),
        ("2.78.0.dev3", False),
        ("2.68.0", False),
        ("2.60.0", False),
        ("2.59.0", False),
        ("2.78.0rc1", False),
        ("not-a-version", False),
    ],
)
def test_version_gate(version: str, current: bool) -> None:
    from histfix._release.backend import choose_backend

    chosen, _ = choose_backend(version, has_repair_messages=True)
    assert (chosen == "upstream") is current


def test_distribution_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    from histfix._release import installed as _release

    installed = {"pydantic-ai": "2.61.0"}  # only the full distribution's metadata

    def version(name: str) -> str:
        if name in installed:
            return installed[name]
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(_release, "dist_info_version", lambda name: None)  # not plain: ask importlib
    monkeypatch.setattr(metadata, "version", version)
    assert _release.installed_release() == ("pydantic-ai", "2.61.0")
    installed["pydantic-ai-slim"] = "2.61.0+local"
    assert _release.installed_release() == ("pydantic-ai-slim", "2.61.0+local")
    installed.clear()
    name, _ = _release.installed_release()
    assert "no distribution metadata" in name
    monkeypatch.setattr(_release, "dist_info_version", {"pydantic-ai": "2.62.0"}.get)
    assert _release.installed_release() == ("pydantic-ai", "2.62.0")  # read from the folder alone


def test_source_detection_agrees_with_import() -> None:
    from histfix._release import installed as _release

    assert _release.source_defines("messages", "repair_messages") is HAS_UPSTREAM_REPAIR


def test_reason_for_unusual_versions() -> None:
    from histfix._release.backend import choose_backend
    from histfix._release.installed import NEWEST_TESTED

    backend, reason = choose_backend("9.1.0", has_repair_messages=True)
    assert backend == "upstream"
    assert f"newer than the newest release histfix was measured on ({NEWEST_TESTED})" in reason
    for measured in ("2.78.0", str(NEWEST_TESTED)):  # up to the newest measured release: no warning
        assert choose_backend(measured, has_repair_messages=True) == (
            "upstream",
            f"pydantic-ai {measured} has repair_messages with the newest behaviour (>= 2.78.0)",
        )
    backend, reason = choose_backend("weird", has_repair_messages=True)
    assert backend == "histfix"
    assert "not PEP 440" in reason
    backend, reason = choose_backend("2.68.0", has_repair_messages=True)
    assert (backend, reason) == (
        "histfix",
        "pydantic-ai 2.68.0 has repair_messages, but it differs from the newest behaviour before 2.78.0: "
        "a merge keeps deferred_pause when any merged request has it, not only when all do",
    )
    backend, reason = choose_backend("2.59.0", has_repair_messages=True)
    assert backend == "histfix"
    assert reason.endswith(  # every difference a release still has, oldest fix first
        "before 2.78.0: a merge hoists a tool-less retry prompt (2.60.0 loads it as RetryFeedbackPart); "
        "a merge keeps deferred_pause when any merged request has it, not only when all do"
    )
    assert choose_backend("1.0.0", has_repair_messages=False) == (
        "histfix",
        "pydantic-ai 1.0.0 has no repair_messages (added in 2.53.0)",
    )


def test_a_string_is_pointed_to_load_json() -> None:
    with pytest.raises(TypeError, match=r"got str: load stored JSON with histfix\.load_json\(\) first"):
        histfix.repair('[{"kind": "request", "parts": []}]')  # type: ignore[arg-type]
