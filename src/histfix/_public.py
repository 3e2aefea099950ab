"""Every public name of histfix, each imported from the module it lives in: the one list of them.

``histfix`` (the package) imports this module on the first use of a public name, so that ``import
histfix`` and the command line's fast paths load none of it; ``histfix.__all__`` is the names here.
Each import is ``X as X``: the form that tells type checkers a name is re-exported.
"""

from ._api import Backend as Backend
from ._api import BackendInfo as BackendInfo
from ._api import backend_info as backend_info
from ._api import check as check
from ._api import classify as classify
from ._api import dump_json as dump_json
from ._api import is_provider_valid as is_provider_valid
from ._api import keep_last_turns as keep_last_turns
from ._api import load_json as load_json
from ._api import repair as repair
from ._api import repair_report as repair_report
from ._api import trim_to_budget as trim_to_budget
from ._profiles.rule import STARTER_PROMPT as STARTER_PROMPT
from ._profiles.targets import PROVIDER_APIS as PROVIDER_APIS
from ._profiles.targets import PROVIDER_NAMES as PROVIDER_NAMES
from ._records.changes import Change as Change
from ._records.changes import ChangeKind as ChangeKind
from ._records.changes import RepairReport as RepairReport
from ._records.problems import Problem as Problem
from ._records.problems import ProblemKind as ProblemKind
from ._records.state import HistoryState as HistoryState
from ._records.state import HistoryStateKind as HistoryStateKind
from ._records.synthesized import SYNTHESIZED_CONTENT as SYNTHESIZED_CONTENT
from ._records.synthesized import SYNTHESIZED_TOOL_RETURN_METADATA_KEY as SYNTHESIZED_TOOL_RETURN_METADATA_KEY
from ._records.synthesized import is_synthesized as is_synthesized
from ._records.tokens import BudgetExceededError as BudgetExceededError
from ._records.tokens import estimate_tokens as estimate_tokens
from ._wiring import RepairProcessor as RepairProcessor
from ._wiring import agent_options as agent_options
