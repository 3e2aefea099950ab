"""One decision of the engine per call: a profile runs over the default repair the call chose.

``backend`` (``"auto"`` by the release rule, or ``HISTFIX_BACKEND``) picks upstream's
``repair_messages`` or histfix's walk once, in the call's plan; the profile's passes then run over
that repair, whichever path (``repair``, ``repair_report``, with or without a provider) asks.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic_ai import messages as pai

import histfix
from histfix._release.switches import upstream_repair_is_current

from conftest import HAS_UPSTREAM_REPAIR
from corpus import CASES
from dsl import Case, call, dump, load, load_history, real, req, ret, user
from emulators import PROVIDER_APIS
from wire import BEDROCK_LLAMA

TARGETS = [*PROVIDER_APIS, "any", BEDROCK_LLAMA]
#: A dangling call, an orphaned result and a merge: every engine has work to do.
BROKEN = [req(user("hi")), real(call("f", "c1"), at=5), req(ret("g", "ghost")), req(user("next"))]


@pytest.fixture
def upstream_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The number of messages of each call of upstream ``repair_messages`` while the test runs."""
    calls: list[int] = []
    upstream = pai.repair_messages  # type: ignore[attr-defined]

    def counting(history: list[pai.ModelMessage], **options: bool) -> list[pai.ModelMessage]:
        calls.append(len(history))
        return upstream(history, **options)  # type: ignore[no-any-return]

    monkeypatch.setattr(pai, "repair_messages", counting)
    yield calls


@pytest.mark.skipif(not upstream_repair_is_current(), reason="auto delegates from 2.78.0")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_profile_with_nothing_to_fix_returns_upstream_s_repair(case: Case) -> None:
    """Where the profile changes nothing beyond the default repair, ``repair(h, provider=P)`` is
    exactly ``repair_messages(h)`` (dump-equal), both ``repair_last_response`` values, and so is
    ``backend="histfix"``, whose walk reproduces it."""
    history = load_history(case)
    for last in (True, False):
        theirs = dump(pai.repair_messages(history, repair_last_response=last))  # type: ignore[attr-defined]
        default = histfix.repair_report(history, repair_last_response=last).changes
        for target in TARGETS:
            try:
                report = histfix.repair_report(history, provider=target, repair_last_response=last)
            except ValueError:  # nothing sendable to that target
                continue
            if report.changes != default:
                continue  # the profile had something to fix
            for backend in ("auto", "histfix"):
                out = histfix.repair(history, provider=target, repair_last_response=last, backend=backend)
                assert dump(out) == theirs, (target, last, backend)
            assert dump(report.messages) == theirs, (target, last)


@pytest.mark.skipif(not HAS_UPSTREAM_REPAIR, reason="repair_messages arrived in 2.53.0")
@pytest.mark.parametrize("backend", ["auto", "upstream", "histfix"])
@pytest.mark.parametrize("provider", [None, "anthropic", "any"])
def test_the_repair_runs_by_the_engine_the_call_chose(
    backend: histfix.Backend, provider: str | None, upstream_calls: list[int]
) -> None:
    """Upstream's repair runs once per call exactly where the call chose it: ``"upstream"``, or
    ``"auto"`` where the release rule delegates; never for ``"histfix"``; with a profile or not,
    through ``repair`` and ``repair_report`` alike."""
    history = load(BROKEN)
    histfix.repair(history, backend=backend, provider=provider)
    histfix.repair_report(history, backend=backend, provider=provider)
    delegates = backend == "upstream" or (backend == "auto" and histfix.backend_info().backend == "upstream")
    assert upstream_calls == ([len(history)] * 2 if delegates else [])


@pytest.mark.parametrize("backend", ["auto", "upstream", "histfix"])
def test_repair_report_takes_the_backend_repair_takes(backend: histfix.Backend) -> None:
    if backend == "upstream" and not HAS_UPSTREAM_REPAIR:
        with pytest.raises(RuntimeError, match="repair_messages"):
            histfix.repair_report(load(BROKEN), backend=backend)
        return
    for case in CASES[:20]:
        history = load_history(case)
        report = histfix.repair_report(history, backend=backend, provider="any")
        assert report.messages == histfix.repair(history, backend=backend, provider="any")
        assert histfix.repair_report(history, backend=backend).messages == histfix.repair(
            history, backend=backend
        )
    with pytest.raises(ValueError, match="backend must be one of"):
        histfix.repair_report([], backend="walk")  # type: ignore[arg-type]
