"""histfix: repair and trim pydantic-ai message histories on every release from 1.0.0 on.

``classify`` says where a stored history stands (complete, waiting on calls or a request,
interrupted, broken) before you persist or continue it. ``repair`` gives the newest upstream ``repair_messages`` behaviour in the installed release's own
types; ``keep_last_turns`` and ``trim_to_budget`` trim without splitting a tool call from its
result; ``agent_options`` wires repair (and trimming) into an ``Agent`` on every release.
Importing histfix does not import pydantic-ai; the first call does.
"""

from __future__ import annotations

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
from ._records.synthesized import SYNTHESIZED_CONTENT, SYNTHESIZED_TOOL_RETURN_METADATA_KEY, is_synthesized
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
