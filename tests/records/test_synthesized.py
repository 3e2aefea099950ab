"""histfix.SYNTHESIZED_CONTENT, SYNTHESIZED_TOOL_RETURN_METADATA_KEY and is_synthesized, on every release.

True for the returns histfix synthesizes and for those upstream synthesizes (``repair_messages``
from 2.53.0, the on-the-wire repair from 2.10.0), also after a JSON round trip; False otherwise.
"""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai import messages as pai

import histfix

from dsl import INTERRUPTED, MARKER, call, load, native_call, native_return, real, req, resp, ret, user
from strict import StrictModel, StrictProviderError

ABORTED = [req(user("test")), resp(call("retrieve_documents", "call_1"), at=5), req(user("test"))]


def synthesized(messages: list[pai.ModelMessage]) -> list[object]:
    return [p for m in messages for p in m.parts if histfix.is_synthesized(p)]


def test_names_match_the_strings_upstream_uses() -> None:
    assert histfix.SYNTHESIZED_TOOL_RETURN_METADATA_KEY == MARKER
    assert histfix.SYNTHESIZED_CONTENT == INTERRUPTED
    for name, ours in [
        ("SYNTHESIZED_TOOL_RETURN_METADATA_KEY", histfix.SYNTHESIZED_TOOL_RETURN_METADATA_KEY),
        ("INTERRUPTED_TOOL_RETURN_CONTENT", histfix.SYNTHESIZED_CONTENT),
    ]:
        if hasattr(pai, name):  # upstream's own names, where the release has them
            assert getattr(pai, name) == ours


@pytest.mark.parametrize("backend", ["histfix", "auto", "upstream"])
def test_true_for_what_repair_synthesizes(backend: histfix.Backend) -> None:
    if backend == "upstream" and not hasattr(pai, "repair_messages"):
        pytest.skip("pydantic_ai.messages.repair_messages arrived in 2.53.0")
    repaired = histfix.repair(load(ABORTED), backend=backend)
    (closing,) = synthesized(repaired)
    assert isinstance(closing, pai.ToolReturnPart) and closing.tool_call_id == "call_1"
    assert synthesized(histfix.load_json(histfix.dump_json(repaired))) == [closing]


def test_true_for_what_pydantic_ai_repairs_on_the_wire() -> None:
    model = StrictModel()
    history = load(ABORTED)
    try:
        Agent(model.model).run_sync(None, message_history=history)
    except StrictProviderError as exc:  # before 2.10.0 the broken history goes out as it is and is rejected
        assert "No tool output found for function call call_1" in str(exc)
        pytest.skip("pydantic-ai repairs on the wire from 2.10.0")
    (sent,) = model.received
    (closing,) = synthesized(sent)
    assert closing.tool_call_id == "call_1"  # type: ignore[attr-defined]


def test_false_for_everything_else() -> None:
    history = load(
        [
            req(user("q")),
            real(call("get", "c1"), native_call("web_search", "n1"), native_return("web_search", "n1")),
            req(ret("get", "c1", INTERRUPTED), ret("get", "c1", "x", metadata={MARKER: False})),
        ]
    )
    assert synthesized(history) == []
    for other in (None, "tool-return", {"part_kind": "tool-return", "metadata": {MARKER: True}}, 3):
        assert histfix.is_synthesized(other) is False


def test_the_walks_returns_are_the_constructors() -> None:
    """The walk makes its synthesized returns from one constructor-made template where the class is
    a plain dataclass (``_walk.return_maker``): for every call in the corpus, on every release, the
    return must be the constructor's own, field by field, in class and in its attribute dict, with
    a metadata dict of its own."""
    import dataclasses

    from histfix._repair.walk import _return_fields, _synthesized_return, return_maker

    from corpus import CASES
    from dsl import loadable

    make = return_maker()
    if not hasattr(pai.ToolReturnPart, "__post_init__"):
        assert make.__name__ == "make", "ToolReturnPart is plain here: the template path should be taken"
    calls = [
        (part, message.timestamp)
        for _, history in loadable(CASES)
        for message in history
        if isinstance(message, pai.ModelResponse)
        for part in message.parts
        if isinstance(part, pai.ToolCallPart)
    ]
    assert len(calls) > 50
    assert sum(getattr(part, "tool_kind", None) is None for part, _ in calls) > 50  # the template's calls
    for call_part, stamp in calls:
        (made,), (again,) = make([call_part], stamp), make([call_part], stamp)
        expected = _synthesized_return(call_part, stamp, _return_fields())
        assert type(made) is type(expected)
        assert vars(made) == vars(expected)
        assert dataclasses.astuple(made) == dataclasses.astuple(expected)
        assert made.metadata is not again.metadata
