"""The README's Python examples run as written, on every pinned release."""

from __future__ import annotations

from typing import Any

from dsl import MemoryStore, call, readme_block, req, resp, to_json, user
from strict import StrictModel

ABORTED = to_json([req(user("test")), resp(call("retrieve_documents", "call_1", {"q": "x"}), at=3)])


def test_upgrade_guide_code_runs() -> None:
    model = StrictModel()
    store = MemoryStore(c1=ABORTED)
    namespace: dict[str, Any] = {"model": model.model, "store": store}
    exec(readme_block("def answer("), namespace)
    assert namespace["answer"]("c1", "new question") == "done"
    assert namespace["answer"]("c1", "and another") == "done"
    assert len(model.received) == 2


def test_quick_start_code_runs() -> None:
    from pydantic_ai import Agent

    model = StrictModel()
    namespace: dict[str, Any] = {"agent": Agent(model.model), "stored_json": ABORTED}
    exec(readme_block("stored_json"), namespace)
    assert namespace["result"].output == "done"
