"""The histories the upgrade check's tests observe: the corpus, the examples and seeded random
ones (finished conversations, which the fast paths take, and broken ones, which they do not)."""

from __future__ import annotations

import json
from pathlib import Path

from corpus import CASES
from generate import random_conversation, random_history

EXAMPLES = Path(__file__).parents[2] / "examples"


def histories() -> dict[str, bytes]:
    """The corpus, the examples and seeded random histories (finished conversations and broken ones)."""
    found = {f"corpus-{i}": json.dumps(case.history).encode() for i, case in enumerate(CASES)}
    found |= {f"example-{path.stem}": path.read_bytes() for path in sorted(EXAMPLES.glob("*.json"))}
    found |= {f"conversation-{seed}": json.dumps(random_conversation(seed)).encode() for seed in range(12)}
    found |= {f"random-{seed}": json.dumps(random_history(seed)).encode() for seed in range(12)}
    return found
