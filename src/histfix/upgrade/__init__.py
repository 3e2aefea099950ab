"""Will every stored history still load and behave on another pydantic-ai release? The upgrade check.

``histfix scan SOURCE --against RELEASE`` (docs/upgrading.md) and, from Python::

    from histfix.store import open_source
    from histfix.upgrade import check_upgrade

    with open_source("chats.jsonl") as source:
        result = check_upgrade(source, ["1.107.10", "2.9.1"])

Each release checked against runs in its own cached environment (``histfix[compare]``), in
long-lived probe processes that the store's histories stream to in batches; ``histfix.upgrade.
dask`` runs the same check on a Dask cluster. Above the stores: it reads any
:class:`histfix.store.Source`, and no store imports it.
"""

from __future__ import annotations

from ._check import CheckError, UpgradeCheck, check_upgrade
from ._pairs import Break, PairRecord, ReleaseSummary, UpgradeResult

__all__ = [
    "Break",
    "CheckError",
    "PairRecord",
    "ReleaseSummary",
    "UpgradeCheck",
    "UpgradeResult",
    "check_upgrade",
]
