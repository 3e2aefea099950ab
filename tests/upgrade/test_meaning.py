"""What a difference between two releases' histories means (histfix.upgrade._meaning), and what
breaks because of it (histfix.upgrade._pairs): behaviour breaks, bookkeeping is only reported."""

from __future__ import annotations

import pytest

from histfix.upgrade._meaning import BOOKKEEPING, MISSING, RESERVED, changes, general, meaning, sort
from histfix.upgrade._pairs import pair
from histfix.upgrade._trip import LOSSLESS, trip_result


@pytest.mark.parametrize("name", sorted(BOOKKEEPING["message"]))
def test_each_message_field_listed_is_bookkeeping(name: str) -> None:
    assert meaning(f"[3].{name}", 1, 2) == "bookkeeping"
    assert meaning(f"[3].{name}.inner") == "bookkeeping"


@pytest.mark.parametrize("name", sorted(BOOKKEEPING["part"]))
def test_each_part_field_listed_is_bookkeeping(name: str) -> None:
    assert meaning(f"[0].parts[2].{name}", 1, 2) == "bookkeeping"


@pytest.mark.parametrize(
    "path",
    [
        "(the whole history)",
        "[2]",
        "[2].parts",
        "[2].parts[1]",
        "[2].parts[1].content",
        "[2].parts[1].tool_call_id",
        "[2].parts[1].args.q",
        "[2].parts[1].outcome",
        "[2].parts[1].provider_name",
        "[2].instructions",
        "[2].state",
        "[2].model_name",
        "[2].a_field_no_one_listed",
    ],
)
def test_everything_else_changes_behaviour(path: str) -> None:
    assert meaning(path, "a", "b") == "behaviour"


def test_metadata_is_the_applications_except_the_reserved_namespace() -> None:
    paused = {RESERVED: {"deferred_pause": True}}
    assert meaning(f"[2].metadata.{RESERVED}.deferred_pause", MISSING, True) == "behaviour"
    assert meaning("[2].metadata.user", "a", "b") == "bookkeeping"
    assert meaning("[2].metadata", paused, None) == "behaviour"  # the whole value, a mark in it
    assert meaning("[2].metadata", {"user": "a"}, None) == "bookkeeping"
    assert meaning("[2].metadata", {RESERVED: {}}, None) == "bookkeeping"  # an emptied namespace: no state
    assert meaning("[0].parts[1].metadata", paused, {RESERVED: {}}) == "behaviour"


def test_changes_see_both_sides_and_sort_keeps_the_first_paths_of_each() -> None:
    before = [{"kind": "request", "metadata": {RESERVED: {}}, "timestamp": "a"}]
    after = [{"kind": "request", "metadata": {RESERVED: {"deferred_pause": True}}, "timestamp": "b"}]
    found = list(changes(before, after))
    assert [path for path, _, _ in found] == [
        "[0].timestamp",
        f"[0].metadata.{RESERVED}.deferred_pause",
    ]
    assert sort(found, "changed") == {
        "changed": 1,
        "changed_paths": [f"[0].metadata.{RESERVED}.deferred_pause"],
        "bookkeeping": 1,
        "bookkeeping_paths": ["[0].timestamp"],
    }
    assert general("[12].parts[3].timestamp") == "[*].parts[*].timestamp"


OK = {
    "loads": None,
    "load_json": None,
    "sends": "sends 3 messages · valid",
    "returns": "x",
    "sent_problems": [],
}


def test_a_round_trip_losing_bookkeeping_only_breaks_nothing() -> None:
    only_stamps = trip_result(
        [("[1].request_timestamp", "2026-01-01T00:00:00Z", None), ("[1].duration", 1.5, None)]
    )
    record = pair("k", "2.78.0", "2.68.0", a=OK, b=OK, trip=only_stamps)
    assert record.breaks == {} and only_stamps["bookkeeping"] == 2 and only_stamps["lost"] == 0
    authority = trip_result([("[1].parts[0].authority", "user", "operator")])
    record = pair("k", "2.78.0", "2.68.0", a=OK, b=OK, trip=authority)
    assert record.breaks == {
        "round_trip": "loaded and dumped on 2.68.0, it loses 1 value(s) that change behaviour: [1].parts[0].authority"
    }
    assert pair("k", "2.78.0", "2.68.0", a=OK, b=OK, trip=LOSSLESS).breaks == {}


def test_repairs_that_write_otherwise_break_only_where_it_changes_behaviour() -> None:
    mark = f"[2].metadata.{RESERVED}.deferred_pause"
    differs = {"changed": 1, "changed_paths": [mark], "bookkeeping": 0, "bookkeeping_paths": []}
    stamps = {"changed": 0, "changed_paths": [], "bookkeeping": 1, "bookkeeping_paths": ["[2].timestamp"]}
    b = {**OK, "repair_differs": differs, "upstream_repair_differs": stamps}
    record = pair("k", "2.68.0", "2.78.0", a=OK, b=b, trip=LOSSLESS)
    assert record.breaks == {
        "repair": "histfix.repair on 2.78.0 writes otherwise than on 2.68.0, in 1 value(s) that change "
        f"behaviour: {mark}"
    }
    b = {**OK, "repair_differs": None, "upstream_repair_differs": differs}
    assert list(pair("k", "2.68.0", "2.78.0", a=OK, b=b, trip=LOSSLESS).breaks) == ["upstream_repair"]
