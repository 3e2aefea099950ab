"""The README's Python examples run as written, on every pinned release."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dsl import call, req, resp, to_json, user
from strict import StrictModel

README = (Path(__file__).parent.parent / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


def block_with(marker: str) -> str:
    (code,) = [b for b in BLOCKS if marker in b]
    return code


class MemoryStore:
    def __init__(self, **conversations: bytes) -> None:
        self.data = dict(conversations)

    def load(self, conversation_id: str) -> bytes:
        return self.data[conversation_id]

    def save(self, conversation_id: str, data: bytes) -> None:
        self.data[conversation_id] = data


ABORTED = to_json([req(user("test")), resp(call("retrieve_documents", "call_1", {"q": "x"}), at=3)])


def test_upgrade_guide_code_runs() -> None:
    model = StrictModel()
    store = MemoryStore(c1=ABORTED)
    namespace: dict[str, Any] = {"model": model.model, "store": store}
    exec(block_with("def answer("), namespace)
    assert namespace["answer"]("c1", "new question") == "done"
    assert namespace["answer"]("c1", "and another") == "done"
    assert len(model.received) == 2


def test_quick_start_code_runs() -> None:
    from pydantic_ai import Agent

    model = StrictModel()
    namespace: dict[str, Any] = {"agent": Agent(model.model), "stored_json": ABORTED}
    exec(block_with("stored_json"), namespace)
    assert namespace["result"].output == "done"
