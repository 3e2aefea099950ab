"""histfix: repair and trim pydantic-ai message histories on every release from 1.0.0 on.

``classify`` says where a stored history stands (complete, waiting on calls or a request,
interrupted, broken) before you persist or continue it. ``repair`` gives the newest upstream ``repair_messages`` behaviour in the installed release's own
types; ``keep_last_turns`` and ``trim_to_budget`` trim without splitting a tool call from its
result; ``agent_options`` wires repair (and trimming) into an ``Agent`` on every release.
Importing histfix does not import pydantic-ai; the first call does.
"""

from __future__ import annotations

# Neither importlib nor typing is imported at run time: `histfix --help` imports this package.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._api import (
        Backend,
        BackendInfo,
        backend_info,
        check,
        classify,
        dump_json,
        is_provider_valid,
        keep_last_turns,
        load_json,
        repair,
        repair_report,
        trim_to_budget,
    )
    from ._profiles.rule import STARTER_PROMPT
    from ._profiles.targets import PROVIDER_APIS, PROVIDER_NAMES
    from ._records.changes import Change, ChangeKind, RepairReport
    from ._records.problems import Problem, ProblemKind
    from ._records.state import HistoryState, HistoryStateKind
    from ._records.synthesized import (
        SYNTHESIZED_CONTENT,
        SYNTHESIZED_TOOL_RETURN_METADATA_KEY,
        is_synthesized,
    )
    from ._records.tokens import BudgetExceededError, estimate_tokens
    from ._wiring import RepairProcessor, agent_options

__all__ = [
    "PROVIDER_APIS",
    "PROVIDER_NAMES",
    "STARTER_PROMPT",
    "SYNTHESIZED_CONTENT",
    "SYNTHESIZED_TOOL_RETURN_METADATA_KEY",
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

__version__ = "0.1.0"

#: Where each public name that is not one of ``_api``'s (its ``__all__``: the functions and the
#: backend types) lives. A name is imported on first use, so ``import histfix`` (and the command
#: line's fast paths) load only the modules of the names they touch.
_HOME = {
    **dict.fromkeys(("Change", "ChangeKind", "RepairReport"), "._records.changes"),
    **dict.fromkeys(("Problem", "ProblemKind"), "._records.problems"),
    **dict.fromkeys(("PROVIDER_APIS", "PROVIDER_NAMES"), "._profiles.targets"),
    "STARTER_PROMPT": "._profiles.rule",
    **dict.fromkeys(("HistoryState", "HistoryStateKind"), "._records.state"),
    **dict.fromkeys(
        ("SYNTHESIZED_CONTENT", "SYNTHESIZED_TOOL_RETURN_METADATA_KEY", "is_synthesized"),
        "._records.synthesized",
    ),
    **dict.fromkeys(("BudgetExceededError", "estimate_tokens"), "._records.tokens"),
    **dict.fromkeys(("RepairProcessor", "agent_options"), "._wiring"),
}


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (PEP 562), then keep it here."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    home = _HOME.get(name, "._api")
    from importlib import import_module

    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
