"""The committed calibration record (tests/data/calibration.json, written by tools/calibrate.py from
pydantic-ai's recorded real traffic): no emulator refused a request the real API accepted, and every
real history 4xx was refused by the rule with its wording. CI cannot fetch the recordings; this
checks the record, and the shapes it taught are selftests in tests/emulator_cases.py (ACCEPTED)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emulators import PROVIDER_APIS

RECORD: dict[str, Any] = json.loads((Path(__file__).parents[1] / "data" / "calibration.json").read_text())


@pytest.mark.parametrize("api", PROVIDER_APIS)
def test_no_false_rejection(api: str) -> None:
    tally = RECORD["emulators"][api]
    assert tally["false_rejections"] == {}
    assert tally["accepted"] == tally["real_2xx"] > 0


@pytest.mark.parametrize("api", PROVIDER_APIS)
def test_every_history_4xx_reproduced(api: str) -> None:
    assert RECORD["emulators"][api]["history_4xx_not_reproduced"] == []


def test_the_record_names_its_source() -> None:
    source = RECORD["source"]
    assert source["repository"] == "pydantic/pydantic-ai"
    assert len(source["commit"]) == 40
    assert source["interactions"] > sum(RECORD["emulators"][api]["requests"] for api in PROVIDER_APIS) > 1000
