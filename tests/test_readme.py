"""The README's Python examples run as written, on every pinned release."""

from __future__ import annotations

from pathlib import Path
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


# --- "Will my provider accept this?": the profile passes, generated from the code -------------------------

README = Path(__file__).parent.parent / "README.md"
BEGIN = "<!-- profile passes: generated from histfix._profiles.registry.RULES"
END = "<!-- end of profile passes -->"


def profile_passes() -> str:
    """The README's table of profile passes, from ``_profiles.RULES`` (name, stage, APIs, why)."""
    from histfix._profiles.registry import RULES
    from histfix._profiles.targets import PROVIDER_APIS

    if not RULES:
        return "No profile passes are registered: every profile is the default repair.\n"
    rows = ["| pass | runs | for | why |", "|---|---|---|---|"]
    for rule in RULES:
        apis = ", ".join(api for api in PROVIDER_APIS if api in rule.apis)
        stage = "before the repair" if rule.stage == "before" else "after the repair"
        why = " ".join(rule.why.split()).replace("|", "\\|")
        rows.append(f"| `{rule.name}` | {stage} | {apis} | {why} |")
    return "\n".join(rows) + "\n"


def generated_section(readme: str) -> tuple[int, int]:
    """Where the generated table sits in ``readme``: after the BEGIN line, up to END."""
    start = readme.index("\n", readme.index(BEGIN)) + 1
    return start, readme.index(END, start)


def test_the_profile_passes_in_the_readme_are_the_codes() -> None:
    readme = README.read_text()
    start, end = generated_section(readme)
    assert readme[start:end] == profile_passes(), (
        "README is stale: run `PYTHONPATH=src:tests/support python tests/test_readme.py`"
    )
    assert readme.index("## Will my provider accept this?") < readme.index("## Try it")


def test_provider_code_runs() -> None:
    from pydantic_ai import Agent

    import histfix

    model = StrictModel()
    namespace: dict[str, Any] = {
        "histfix": histfix,
        "Agent": Agent,
        "model": model.model,
        "stored": histfix.load_json(ABORTED),
    }
    exec(readme_block('provider="auto"'), namespace)
    assert namespace["agent"].run_sync("next", message_history=namespace["history"]).output == "done"
    assert histfix.check(namespace["history"], provider="anthropic") == []


if __name__ == "__main__":  # rewrite the README's generated table (PYTHONPATH=src:tests/support)
    text = README.read_text()
    start, end = generated_section(text)
    README.write_text(text[:start] + profile_passes() + text[end:])
    print(f"wrote the profile passes into {README}")
