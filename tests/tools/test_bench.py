"""The benchmark's lower bounds (``--bounds``): what they count, and that the option runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_repair


def test_new_objects_counts_what_the_adversarial_output_needs_built() -> None:
    # every six messages: the orphan's request without it, the merged request, the request of the
    # second return are new messages; the two synthesized returns are new parts
    history = bench_repair.adversarial(600)
    built, made = bench_repair.new_objects(history, bench_repair.forward_repair(history))
    assert (len(built), len(made)) == (300, 200)
    kept = bench_repair.least_objects(built, made)
    assert kept == [*built, *made]
    assert not any(copy is original for copy, original in zip(kept, [*built, *made], strict=True))


def test_new_objects_finds_nothing_to_build_in_a_clean_history() -> None:
    history = bench_repair.clean(300)
    assert bench_repair.new_objects(history, bench_repair.forward_repair(history)) == ([], [])


def test_least_pairing_finds_the_orphans_and_the_open_calls() -> None:
    # ten groups of six: each starts with an orphan, and no result answers either of its calls
    open_calls, orphans = bench_repair.least_pairing(bench_repair.adversarial(60))
    assert [part.tool_call_id for part in orphans] == [f"gone{n}" for n in range(1, 11)]  # type: ignore[attr-defined]
    assert list(open_calls) == [f"{name}{n}" for n in range(1, 11) for name in "ab"]


def test_bounds_option_prints_one_row_per_size(capsys: pytest.CaptureFixture[str]) -> None:
    bench_repair.main(["60", "120", "--shapes", "adversarial", "--bounds", "--runs", "1", "--clock", "cpu"])
    out = capsys.readouterr().out
    table = out[out.index("the least work of any repair") :].splitlines()
    assert table[1].split() == [
        "messages",
        "new",
        "msgs",
        "new",
        "parts",
        "floor",
        "ms",
        "pairing",
        "objects",
        "both",
        "histfix",
    ]
    assert [row.split()[0] for row in table[2:] if row and not row.startswith("{")] == ["60", "120"]
