"""What the tests that build other releases' environments share: where the wheels are, uv, and
the one reason they skip (they run once, in `tools` on the newest release, offline)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from histfix._compare import environments as _compare
from histfix._release.pinned import NEWEST

from conftest import PYDANTIC_AI

ROOT = Path(__file__).parent.parent.parent
WHEELHOUSE = Path(os.environ.get("HISTFIX_WHEELHOUSE", ROOT / "wheelhouse"))


def uv_or_none() -> str | None:
    """The uv the compare environments use, or None where there is none."""
    try:
        return _compare.find_uv()
    except _compare.CompareError:
        return None


def why_not_offline() -> str | None:
    """Why the offline runs are skipped here: they run once, in `tools` on the newest release (a
    sweep that runs these files on every release builds the environments once, not per release)."""
    if str(PYDANTIC_AI) != NEWEST:
        return f"builds environments, so it runs once: in `tools`, on {NEWEST} (this is {PYDANTIC_AI})"
    if not (WHEELHOUSE / "inputs.json").exists():
        return f"needs a built wheelhouse at {WHEELHOUSE} (`nox -s wheelhouse`, or set HISTFIX_WHEELHOUSE)"
    if uv_or_none() is None:
        return "needs uv (pip install 'histfix[compare]')"
    return None


offline = pytest.mark.skipif(why_not_offline() is not None, reason=why_not_offline() or "")
