"""Named stored histories and what pydantic-ai 2.78.0's ``repair_messages`` makes of them.

Every expected history is written out by hand from the rules in
``/work/shared/spec/upstream-behaviour.md`` §3 and §7 and checked against the real 2.78.0 function
(``repair_messages(load(case.history), repair_last_response=...) == load(case.expected)``).
Tool-less retry prompts are written as stored JSON (``retry-prompt`` without ``tool_name``); from
2.60 they load as ``RetryFeedbackPart``, which the merge never moves, and the expected outputs
follow that.

Conventions: every response has its own ``at=`` second (synthesized returns carry the ``at`` of the
response that made the call); request parts keep the default timestamp; ids are always explicit.

``needs`` names used here (a release that lacks the feature cannot load the case at all):
- ``custom_tool_kind``: a call with ``tool_kind='mykind'`` validates (fails on 1.95.0-2.57.0, where
  ``tool_kind`` is a Literal; before 1.95.0 the key is ignored).
- ``core_tool_kind_return``: a ``tool-return`` with ``tool_kind='tool-search'`` and string content
  validates (fails on 1.107.10, which loads it as a typed ToolSearchReturnPart needing object
  content; loads on 1.0.0 (key ignored), 2.59.0 and 2.68.0; other releases not checked).
"""

from __future__ import annotations

from typing import Any

from dsl import (
    Case,
    Json,
    call,
    native_call,
    native_return,
    real,
    req,
    resp,
    ret,
    retry,
    synth,
    system,
    text,
    thinking,
    user,
)

CASES: list[Case] = []


def case(name: str, doc: str, history: list[Json], expected: list[Json], **options: Any) -> None:
    CASES.append(Case(name=name, doc=doc, history=history, expected=expected, **options))


NS = "__pydantic_ai__"  # the request-metadata namespace a merge keeps
#: The form of OpenAI's encrypted reasoning (a Fernet token), which Anthropic cannot verify
OPENAI_SIGNATURE = "gAAAAABpZmFrZS1lbmNyeXB0ZWQtcmVhc29uaW5n"

# === Seed: the history from the bug report ==========================================================
SEED_CALL = call("retrieve_documents", "call_1", {"search_query": "test"})

case(
    "SEED_repair_last_true",
    "Seed history: the last response's dangling call is closed before the trailing user prompt.",
    history=[req(user("test")), real(SEED_CALL, at=10), req(user("test"))],
    expected=[
        req(user("test")),
        real(SEED_CALL, at=10),
        req(synth("retrieve_documents", "call_1", at=10), user("test")),
    ],
)
case(
    "SEED_repair_last_false",
    "Seed history, repair_last_response=False: the last response is left alone though a request follows.",
    history=[req(user("test")), real(SEED_CALL, at=10), req(user("test"))],
    expected=[req(user("test")), real(SEED_CALL, at=10), req(user("test"))],
    repair_last_response=False,
)
case(
    "SEED_trimmed_repair_last_true",
    "Seed trimmed to 2 messages: the synthesized return goes into a new trailing request.",
    history=[req(user("test")), real(SEED_CALL, at=10)],
    expected=[
        req(user("test")),
        real(SEED_CALL, at=10),
        req(synth("retrieve_documents", "call_1", at=10)),
    ],
)
case(
    "SEED_trimmed_repair_last_false",
    "Seed trimmed to 2 messages with repair_last_response=False: unchanged.",
    history=[req(user("test")), real(SEED_CALL, at=10)],
    expected=[req(user("test")), real(SEED_CALL, at=10)],
    repair_last_response=False,
)

# === B: trailing dangling calls =====================================================================
PARIS = call("weather", "w1", {"city": "Paris"})
ROME = call("weather", "w2", {"city": "Rome"})

case(
    "B_trailing_dangling_true",
    "Trailing response with text and two calls: both closed, in call order, in a new request.",
    history=[
        req(user("weather in Paris and Rome?")),
        real(text("checking"), PARIS, ROME, at=10),
    ],
    expected=[
        req(user("weather in Paris and Rome?")),
        real(text("checking"), PARIS, ROME, at=10),
        req(synth("weather", "w1", at=10), synth("weather", "w2", at=10)),
    ],
)
case(
    "B2_trailing_dangling_false",
    "Trailing response with dangling calls and repair_last_response=False: unchanged.",
    history=[
        req(user("weather in Paris and Rome?")),
        real(text("checking"), PARIS, ROME, at=10),
    ],
    expected=[
        req(user("weather in Paris and Rome?")),
        real(text("checking"), PARIS, ROME, at=10),
    ],
    repair_last_response=False,
)
case(
    "B3_false_still_repairs_interior",
    "repair_last_response=False only spares the last response: an earlier dangling call is closed.",
    history=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(user("changed my mind")),
        real(call("g", "c2"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(synth("f", "c1", at=10), user("changed my mind")),
        real(call("g", "c2"), at=20),
    ],
    repair_last_response=False,
)

# === A: interior dangling calls =====================================================================
case(
    "A_interior_dangling_next_user",
    "Interior dangling call, next request holds only a user prompt: synthesized return inserted at index 0.",
    history=[
        req(user("look it up")),
        real(call("lookup", "c1", {"q": "x"}), at=10),
        req(user("never mind")),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("look it up")),
        real(call("lookup", "c1", {"q": "x"}), at=10),
        req(synth("lookup", "c1", at=10), user("never mind")),
        real(text("ok"), at=20),
    ],
)
case(
    "A2_interior_dangling_next_has_return",
    "Two calls, the next request answers one: the synthesized return goes after the real one.",
    history=[
        req(user("do both")),
        real(call("f", "c1"), call("g", "c2"), at=10),
        req(ret("g", "c2", "g done")),
        real(text("half done"), at=20),
    ],
    expected=[
        req(user("do both")),
        real(call("f", "c1"), call("g", "c2"), at=10),
        req(ret("g", "c2", "g done"), synth("f", "c1", at=10)),
        real(text("half done"), at=20),
    ],
)
case(
    "A2b_user_before_return_synth_after_last_result",
    "[U, Ret(c2)] with c1 dangling becomes [U, Ret(c2), Synth(c1)]: the user prompt keeps its place.",
    history=[
        req(user("do both")),
        real(call("f", "c1"), call("g", "c2"), at=10),
        req(user("x"), ret("g", "c2", "g done")),
        real(text("half done"), at=20),
    ],
    expected=[
        req(user("do both")),
        real(call("f", "c1"), call("g", "c2"), at=10),
        req(user("x"), ret("g", "c2", "g done"), synth("f", "c1", at=10)),
        real(text("half done"), at=20),
    ],
)
case(
    "A3_dangling_then_synthetic_response",
    "Synthetic response with a dangling call, then another synthetic response: a new request splits them.",
    history=[
        req(user("go")),
        resp(call("f", "c1"), at=10),
        resp(text("later"), at=20),
        req(user("next")),
    ],
    expected=[
        req(user("go")),
        resp(call("f", "c1"), at=10),
        req(synth("f", "c1", at=10)),
        resp(text("later"), at=20),
        req(user("next")),
    ],
)
case(
    "A4_dangling_then_real_response",
    "Real response with a dangling call followed directly by a real response: a new request is inserted.",
    history=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        real(text("later"), at=20),
        req(user("next")),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(synth("f", "c1", at=10)),
        real(text("later"), at=20),
        req(user("next")),
    ],
)

# === C: orphaned results ============================================================================
case(
    "C_orphan_interior_request_removed_responses_merge",
    "Orphan return alone in an interior request: request removed, the two synthetic responses merge.",
    history=[
        req(user("hi")),
        resp(text("a"), at=10),
        req(ret("f", "ghost")),
        resp(text("b"), at=20),
    ],
    expected=[req(user("hi")), resp(text("a"), text("b"), at=10)],
)
case(
    "C_orphan_interior_between_real_responses",
    "A request emptied in the middle between two real responses is removed; the responses stay separate.",
    history=[
        req(user("hi")),
        real(text("a"), at=10),
        req(ret("f", "ghost")),
        real(text("b"), at=20),
        req(user("next")),
    ],
    expected=[req(user("hi")), real(text("a"), at=10), real(text("b"), at=20), req(user("next"))],
)
case(
    "C2_orphan_alone_in_last_request_kept_empty",
    "Orphan return alone in the last request: an empty request is kept, with its other fields.",
    history=[
        req(user("hi")),
        real(text("hello"), at=10),
        req(ret("f", "ghost"), timestamp=30, instructions="Be brief", metadata={"app": "kept"}),
    ],
    expected=[
        req(user("hi")),
        real(text("hello"), at=10),
        req(timestamp=30, instructions="Be brief", metadata={"app": "kept"}),
    ],
)
case(
    "C2b_emptied_last_request_receives_synth",
    "The last request empties to [] and then receives the synthesized return of the last response.",
    history=[req(user("hi")), real(call("f", "c1"), at=10), req(ret("g", "ghost"), timestamp=30)],
    expected=[req(user("hi")), real(call("f", "c1"), at=10), req(synth("f", "c1", at=10), timestamp=30)],
)
case(
    "C2c_emptied_last_request_false",
    "Same as C2b with repair_last_response=False: the last request stays empty.",
    history=[req(user("hi")), real(call("f", "c1"), at=10), req(ret("g", "ghost"), timestamp=30)],
    expected=[req(user("hi")), real(call("f", "c1"), at=10), req(timestamp=30)],
    repair_last_response=False,
)
case(
    "C2d_emptied_last_request_merges_into_previous",
    "The kept empty last request merges into the request before it (its timestamp wins).",
    history=[
        req(user("hi")),
        real(text("hello"), at=10),
        req(user("more"), timestamp=20),
        req(ret("f", "ghost"), timestamp=30),
    ],
    expected=[req(user("hi")), real(text("hello"), at=10), req(user("more"), timestamp=30)],
)
case(
    "C3_orphan_next_to_user_prompt",
    "Orphan return next to a user prompt: only the return is dropped.",
    history=[
        req(user("hi")),
        real(text("hello"), at=10),
        req(ret("f", "ghost"), user("next")),
        real(text("bye"), at=20),
    ],
    expected=[req(user("hi")), real(text("hello"), at=10), req(user("next")), real(text("bye"), at=20)],
)

# === D: a result before its call ====================================================================
case(
    "D_return_before_its_call",
    "A return placed before its call is dropped as an orphan, and the call then gets a synthesized return.",
    history=[
        req(user("start"), ret("f", "c1", "too early")),
        real(call("f", "c1"), at=10),
        req(user("next")),
    ],
    expected=[
        req(user("start")),
        real(call("f", "c1"), at=10),
        req(synth("f", "c1", at=10), user("next")),
    ],
)
case(
    "D2_return_before_call_alone_in_first_request",
    "The early return is the only part of the first request: that request is removed (it is not the last).",
    history=[req(ret("f", "c1", "too early")), real(call("f", "c1"), at=10), req(user("next"))],
    expected=[real(call("f", "c1"), at=10), req(synth("f", "c1", at=10), user("next"))],
)

# === E: duplicate ids within one response (FIFO) ====================================================
case(
    "E_duplicate_ids_one_return",
    "Calls (a,x),(b,x) in one response and one return: it answers a (FIFO), b gets a synthesized return.",
    history=[
        req(user("go")),
        real(call("a", "x"), call("b", "x"), at=10),
        req(ret("a", "x")),
        real(text("done"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("a", "x"), call("b", "x"), at=10),
        req(ret("a", "x"), synth("b", "x", at=10)),
        real(text("done"), at=20),
    ],
)
case(
    "E2_duplicate_ids_two_returns",
    "Calls (a,x),(b,x) in one response and two returns: both answered, unchanged (idempotent).",
    history=[
        req(user("go")),
        real(call("a", "x"), call("b", "x"), at=10),
        req(ret("a", "x"), ret("b", "x")),
        real(text("done"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("a", "x"), call("b", "x"), at=10),
        req(ret("a", "x"), ret("b", "x")),
        real(text("done"), at=20),
    ],
)
case(
    "E3_duplicate_ids_no_returns",
    "Calls (a,x),(b,x) with no returns: two synthesized returns, both with id x, in call order.",
    history=[req(user("go")), real(call("a", "x"), call("b", "x"), at=10), req(user("next"))],
    expected=[
        req(user("go")),
        real(call("a", "x"), call("b", "x"), at=10),
        req(synth("a", "x", at=10), synth("b", "x", at=10), user("next")),
    ],
)

# === F: ids reused across responses, duplicate results ===============================================
case(
    "F_id_reused_by_later_response",
    "An open call whose id a later response reuses is shadowed: the older call gets the synthesized return.",
    history=[
        req(user("go")),
        real(call("a", "x"), at=10),
        req(user("again")),
        real(call("b", "x"), at=20),
        req(ret("b", "x")),
        real(text("done"), at=30),
    ],
    expected=[
        req(user("go")),
        real(call("a", "x"), at=10),
        req(synth("a", "x", at=10), user("again")),
        real(call("b", "x"), at=20),
        req(ret("b", "x")),
        real(text("done"), at=30),
    ],
)
case(
    "F_id_reused_both_dangling",
    "Id x reused by a later response and neither call answered: each gets its own synthesized return.",
    history=[
        req(user("go")),
        real(call("a", "x"), at=10),
        req(user("again")),
        real(call("b", "x"), at=20),
        req(user("and again")),
    ],
    expected=[
        req(user("go")),
        real(call("a", "x"), at=10),
        req(synth("a", "x", at=10), user("again")),
        real(call("b", "x"), at=20),
        req(synth("b", "x", at=20), user("and again")),
    ],
)
case(
    "F3_shadowed_call_synthesized_first",
    "Resp0[a:x, b:z] open, z reused later: b is shadowed first, a found at the end: Synth(b), Synth(a).",
    history=[
        req(user("go")),
        real(call("a", "x"), call("b", "z"), at=10),
        req(user("again")),
        real(call("c", "z"), at=20),
        req(ret("c", "z")),
        real(text("done"), at=30),
    ],
    expected=[
        req(user("go")),
        real(call("a", "x"), call("b", "z"), at=10),
        req(synth("b", "z", at=10), synth("a", "x", at=10), user("again")),
        real(call("c", "z"), at=20),
        req(ret("c", "z")),
        real(text("done"), at=30),
    ],
)
case(
    "F4_synth_order_follows_first_appearance_of_id",
    "Resp0[f:y] answered, Resp1[p:x, q:y] both dangling: synthesized in first-use order of the ids (y, x).",
    history=[
        req(user("go")),
        real(call("f", "y"), at=10),
        req(ret("f", "y")),
        real(call("p", "x"), call("q", "y"), at=20),
        req(user("next")),
    ],
    expected=[
        req(user("go")),
        real(call("f", "y"), at=10),
        req(ret("f", "y")),
        real(call("p", "x"), call("q", "y"), at=20),
        req(synth("q", "y", at=20), synth("p", "x", at=20), user("next")),
    ],
)
case(
    "F2_duplicate_return_for_answered_call_kept",
    "A second return for an already answered call is not an orphan: it is kept, nothing is synthesized.",
    history=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(ret("f", "c1", "first"), ret("f", "c1", "again")),
        real(text("done"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(ret("f", "c1", "first"), ret("f", "c1", "again")),
        real(text("done"), at=20),
    ],
)
case(
    "F2b_duplicate_return_in_later_request_kept",
    "A duplicate return in a later request (after a user turn) is kept where it is.",
    history=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(ret("f", "c1", "first")),
        real(text("done"), at=20),
        req(ret("f", "c1", "late copy"), user("more")),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(ret("f", "c1", "first")),
        real(text("done"), at=20),
        req(ret("f", "c1", "late copy"), user("more")),
    ],
)
case(
    "F2c_stale_duplicate_does_not_answer_reused_id",
    "A surplus return for answered id x does not pre-answer a later call reusing x: it is synthesized.",
    history=[
        req(user("go")),
        real(call("a", "x"), at=10),
        req(ret("a", "x", "first"), ret("a", "x", "surplus")),
        real(call("b", "x"), at=20),
        req(user("next")),
    ],
    expected=[
        req(user("go")),
        real(call("a", "x"), at=10),
        req(ret("a", "x", "first"), ret("a", "x", "surplus")),
        real(call("b", "x"), at=20),
        req(synth("b", "x", at=20), user("next")),
    ],
)

# === G/H: retry prompts =============================================================================
case(
    "G_toolless_retry_matching_id_does_not_answer",
    "A tool-less retry prompt with a call's id answers nothing: the synthesized return goes before it.",
    history=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(retry("Please answer in plain text", id="c1")),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(synth("f", "c1", at=10), retry("Please answer in plain text", id="c1")),
        real(text("ok"), at=20),
    ],
)
case(
    "G2_toolless_retry_between_results_moved",
    "A tool-less retry prompt between two returns is not a result: it is moved after the last return.",
    history=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), at=10),
        req(ret("f", "c1"), retry("that was odd", id="r9"), ret("g", "c2")),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), at=10),
        req(ret("f", "c1"), ret("g", "c2"), retry("that was odd", id="r9")),
        real(text("ok"), at=20),
    ],
)
case(
    "G3_toolless_retry_not_hoisted_in_merge",
    "Merging requests hoists the return but not the tool-less retry prompt (2.60+ RetryFeedbackPart).",
    history=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(user("a")),
        req(retry("feedback", id="r1"), ret("f", "c1")),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(ret("f", "c1"), user("a"), retry("feedback", id="r1")),
        real(text("ok"), at=20),
    ],
)
case(
    "H_toolbound_retry_answers_call",
    "A tool-bound retry prompt answers its call: nothing is synthesized.",
    history=[
        req(user("go")),
        real(call("f", "c1", {"n": "bad"}), at=10),
        req(retry("n must be an int", name="f", id="c1")),
        real(call("f", "c2", {"n": 1}), at=20),
        req(ret("f", "c2")),
        real(text("ok"), at=30),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1", {"n": "bad"}), at=10),
        req(retry("n must be an int", name="f", id="c1")),
        real(call("f", "c2", {"n": 1}), at=20),
        req(ret("f", "c2")),
        real(text("ok"), at=30),
    ],
)
case(
    "H2_toolbound_retry_orphan_dropped",
    "A tool-bound retry prompt whose id was never called is dropped like an orphan return.",
    history=[
        req(user("go")),
        real(text("hello"), at=10),
        req(retry("bad args", name="f", id="ghost"), user("again")),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("go")),
        real(text("hello"), at=10),
        req(user("again")),
        real(text("ok"), at=20),
    ],
)
case(
    "H3_toolbound_retry_hoisted_in_merge",
    "A tool-bound retry prompt is a result: a merge puts it ahead of the user prompt.",
    history=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(user("hurry")),
        req(retry("bad args", name="f", id="c1")),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(retry("bad args", name="f", id="c1"), user("hurry")),
        real(text("ok"), at=20),
    ],
)

# === Truncated args ==================================================================================
TRUNCATED = call("search", "c1", '{"q": "unfinished')

case(
    "T_truncated_args_dangling_closed",
    "A trailing call whose args string was cut off mid-stream is kept verbatim and closed.",
    history=[req(user("search")), real(text("searching"), TRUNCATED, at=10)],
    expected=[
        req(user("search")),
        real(text("searching"), TRUNCATED, at=10),
        req(synth("search", "c1", at=10)),
    ],
)
case(
    "T2_truncated_args_dangling_false",
    "The same truncated call with repair_last_response=False is left for args validation: unchanged.",
    history=[req(user("search")), real(text("searching"), TRUNCATED, at=10)],
    expected=[req(user("search")), real(text("searching"), TRUNCATED, at=10)],
    repair_last_response=False,
)
case(
    "T3_truncated_args_interior",
    "An interior truncated-args call is closed like any other dangling call.",
    history=[req(user("search")), real(TRUNCATED, at=10), req(user("retry please")), real(text("ok"), at=20)],
    expected=[
        req(user("search")),
        real(TRUNCATED, at=10),
        req(synth("search", "c1", at=10), user("retry please")),
        real(text("ok"), at=20),
    ],
)

# === I: native (builtin) tool parts ==================================================================
WEB_CALL = native_call("web_search", "n1", {"query": "pydantic"})

case(
    "I_native_call_without_return_untouched",
    "A native (builtin) call with no return is not repaired.",
    history=[
        req(user("search the web")),
        real(WEB_CALL, text("searching"), at=10),
        req(user("next")),
    ],
    expected=[
        req(user("search the web")),
        real(WEB_CALL, text("searching"), at=10),
        req(user("next")),
    ],
)
case(
    "I2_native_return_in_response_untouched",
    "A native call with its native return inside the response is left alone.",
    history=[
        req(user("search the web")),
        real(WEB_CALL, native_return("web_search", "n1", "results"), text("found it"), at=10),
        req(user("thanks")),
        real(text("welcome"), at=20),
    ],
    expected=[
        req(user("search the web")),
        real(WEB_CALL, native_return("web_search", "n1", "results"), text("found it"), at=10),
        req(user("thanks")),
        real(text("welcome"), at=20),
    ],
)
case(
    "I3_return_for_native_call_id_dropped",
    "A regular return whose id only a native call used is an orphan (native calls are not ToolCallParts).",
    history=[
        req(user("search the web")),
        real(native_call("web_search", "n1"), text("searching"), at=10),
        req(ret("web_search", "n1"), user("next")),
    ],
    expected=[
        req(user("search the web")),
        real(native_call("web_search", "n1"), text("searching"), at=10),
        req(user("next")),
    ],
)

# === J: merging consecutive requests ================================================================
case(
    "J_metadata_namespace_merged_other_keys_dropped",
    "Merged requests keep only the '__pydantic_ai__' metadata namespace (later keys win); run_id is dropped.",
    history=[
        req(user("a"), metadata={NS: {"k": 1, "j": 1}, "app": "x"}, run_id="run-1"),
        req(user("b"), metadata={NS: {"j": 2}, "trace": "t"}),
        real(text("ok"), at=10),
    ],
    expected=[
        req(user("a"), user("b"), metadata={NS: {"k": 1, "j": 2}}),
        real(text("ok"), at=10),
    ],
)
case(
    "J_metadata_without_namespace_becomes_none",
    "Merged requests with only application metadata keys end up with no metadata.",
    history=[req(user("a"), metadata={"app": 1}), req(user("b")), real(text("ok"), at=10)],
    expected=[req(user("a"), user("b")), real(text("ok"), at=10)],
)
case(
    "J_metadata_namespace_not_a_dict_ignored",
    "A '__pydantic_ai__' value that is not a dict is ignored; the other request's namespace dict is kept.",
    history=[
        req(user("a"), metadata={NS: "not-a-dict"}),
        req(user("b"), metadata={NS: {"a": 1}}),
        real(text("ok"), at=10),
    ],
    expected=[req(user("a"), user("b"), metadata={NS: {"a": 1}}), real(text("ok"), at=10)],
)
case(
    "J2_timestamp_later_wins",
    "Merged request takes the later request's timestamp.",
    history=[req(user("a"), timestamp=5), req(user("b"), timestamp=8), real(text("ok"), at=10)],
    expected=[req(user("a"), user("b"), timestamp=8), real(text("ok"), at=10)],
)
case(
    "J2b_timestamp_earlier_kept_when_later_missing",
    "Merged request keeps the earlier timestamp when the later request has none.",
    history=[req(user("a"), timestamp=5), req(user("b")), real(text("ok"), at=10)],
    expected=[req(user("a"), user("b"), timestamp=5), real(text("ok"), at=10)],
)
case(
    "J3_instructions_equal_merged",
    "Requests with equal instructions merge and keep them.",
    history=[
        req(user("a"), instructions="Be terse"),
        req(user("b"), instructions="Be terse"),
        real(text("ok"), at=10),
    ],
    expected=[req(user("a"), user("b"), instructions="Be terse"), real(text("ok"), at=10)],
)
case(
    "J3b_instructions_earlier_missing",
    "A request without instructions merges with one that has them; the merged request has them.",
    history=[req(user("a")), req(user("b"), instructions="Be terse"), real(text("ok"), at=10)],
    expected=[req(user("a"), user("b"), instructions="Be terse"), real(text("ok"), at=10)],
)
case(
    "J3c_instructions_earlier_empty_string",
    "Empty-string instructions count as empty: merged, the later instructions are taken.",
    history=[
        req(user("a"), instructions=""),
        req(user("b"), instructions="Be terse"),
        real(text("ok"), at=10),
    ],
    expected=[req(user("a"), user("b"), instructions="Be terse"), real(text("ok"), at=10)],
)
case(
    "J3d_instructions_later_missing",
    "The earlier request's instructions survive a merge with a request that has none.",
    history=[req(user("a"), instructions="Be terse"), req(user("b")), real(text("ok"), at=10)],
    expected=[req(user("a"), user("b"), instructions="Be terse"), real(text("ok"), at=10)],
)
case(
    "J3e_instructions_different_not_merged",
    "Different instructions: not merged; the unmerged request still gets parts moved from between results.",
    history=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), at=10),
        req(ret("f", "c1"), user("x"), ret("g", "c2"), instructions="A"),
        req(user("y"), instructions="B"),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), at=10),
        req(ret("f", "c1"), ret("g", "c2"), user("x"), instructions="A"),
        req(user("y"), instructions="B"),
        real(text("ok"), at=20),
    ],
)
case(
    "J4_interrupted_state_reset_by_merge",
    "A request with state='interrupted' merged with the next one becomes a default (complete) request.",
    history=[req(user("a"), state="interrupted"), req(user("b")), real(text("ok"), at=10)],
    expected=[req(user("a"), user("b")), real(text("ok"), at=10)],
)
case(
    "J4b_interrupted_state_kept_unmerged",
    "A request with state='interrupted' that is not merged keeps its state.",
    history=[req(user("a")), real(text("ok"), at=10), req(user("b"), state="interrupted")],
    expected=[req(user("a")), real(text("ok"), at=10), req(user("b"), state="interrupted")],
)
case(
    "J5_three_requests_merge",
    "Three consecutive requests fold into one: instructions, latest timestamp and the merged namespace.",
    history=[
        req(user("a"), timestamp=1, metadata={NS: {"a": 1}}),
        req(user("b"), timestamp=2, instructions="I"),
        req(user("c"), metadata={NS: {"c": 3}, "app": 0}),
        real(text("ok"), at=10),
    ],
    expected=[
        req(user("a"), user("b"), user("c"), timestamp=2, instructions="I", metadata={NS: {"a": 1, "c": 3}}),
        real(text("ok"), at=10),
    ],
)
# === P: the deferred-pause mark in merges (2.78.0) ==================================================
#: What a run writes on the requests it records when it pauses for deferred or approval calls.
PAUSED = {NS: {"deferred_pause": True}}
case(
    "P_pause_dropped_when_a_new_prompt_merges",
    "A run paused on deferred call c1 (c2's result marked as the pause); the user then wrote something "
    "else: the merged request is no pause record, and its namespace stays, emptied.",
    history=[
        req(user("delete the old backups")),
        real(call("delete_backups", "c1"), call("list_backups", "c2"), at=10),
        req(ret("list_backups", "c2"), metadata=PAUSED),
        req(user("Actually, never mind.")),
    ],
    expected=[
        req(user("delete the old backups")),
        real(call("delete_backups", "c1"), call("list_backups", "c2"), at=10),
        req(
            ret("list_backups", "c2"),
            synth("delete_backups", "c1", at=10),
            user("Actually, never mind."),
            metadata={NS: {}},
        ),
    ],
)
case(
    "P2_pause_dropped_open_frontier_kept",
    "The same pause and new prompt with repair_last_response=False: c1 stays open, and the merge "
    "still drops the mark.",
    history=[
        req(user("delete the old backups")),
        real(call("delete_backups", "c1"), call("list_backups", "c2"), at=10),
        req(ret("list_backups", "c2"), metadata=PAUSED),
        req(user("Actually, never mind.")),
    ],
    expected=[
        req(user("delete the old backups")),
        real(call("delete_backups", "c1"), call("list_backups", "c2"), at=10),
        req(ret("list_backups", "c2"), user("Actually, never mind."), metadata={NS: {}}),
    ],
    repair_last_response=False,
)
case(
    "P3_pause_kept_when_every_request_paused",
    "Two pause records merged (results and content recorded at the pause) stay one; other keys merge.",
    history=[
        req(user("go")),
        real(call("approve_me", "c1"), call("f", "c2"), at=10),
        req(ret("f", "c2"), metadata={NS: {"deferred_pause": True, "a": 1}}),
        req(user("queued note"), metadata={NS: {"deferred_pause": True, "b": 2}, "app": "x"}),
    ],
    expected=[
        req(user("go")),
        real(call("approve_me", "c1"), call("f", "c2"), at=10),
        req(
            ret("f", "c2"),
            synth("approve_me", "c1", at=10),
            user("queued note"),
            metadata={NS: {"deferred_pause": True, "a": 1, "b": 2}},
        ),
    ],
)
case(
    "P4_pause_three_way_fold_needs_all",
    "Three requests fold pairwise: the mark survives only when all three carry it; the other keys stay.",
    history=[
        req(user("a"), metadata={NS: {"deferred_pause": True, "k": 1}}),
        req(user("b")),
        req(user("c"), metadata={NS: {"deferred_pause": True, "j": 2}}),
        real(text("ok"), at=10),
    ],
    expected=[
        req(user("a"), user("b"), user("c"), metadata={NS: {"k": 1, "j": 2}}),
        real(text("ok"), at=10),
    ],
)
case(
    "P5_pause_three_way_all_paused",
    "Three pause records fold into one pause record.",
    history=[
        req(user("a"), metadata=PAUSED),
        req(user("b"), metadata=PAUSED),
        req(user("c"), metadata=PAUSED),
        real(text("ok"), at=10),
    ],
    expected=[req(user("a"), user("b"), user("c"), metadata=PAUSED), real(text("ok"), at=10)],
)
case(
    "P6_pause_mark_must_be_exactly_true",
    "Only deferred_pause: true marks a pause: 1 or 'true' on one side drops the mark from the merge.",
    history=[
        req(user("a"), metadata={NS: {"deferred_pause": 1}}),
        req(user("b"), metadata=PAUSED),
        real(text("ok"), at=10),
        req(user("c"), metadata=PAUSED),
        req(user("d"), metadata={NS: {"deferred_pause": "true"}}),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("a"), user("b"), metadata={NS: {}}),
        real(text("ok"), at=10),
        req(user("c"), user("d"), metadata={NS: {}}),
        real(text("ok"), at=20),
    ],
)
case(
    "P7_pause_beside_a_namespace_not_a_dict",
    "A '__pydantic_ai__' that is not a dict is no pause record: the other request's mark goes too.",
    history=[
        req(user("a"), metadata={NS: "paused"}),
        req(user("b"), metadata=PAUSED),
        real(text("ok"), at=10),
    ],
    expected=[req(user("a"), user("b"), metadata={NS: {}}), real(text("ok"), at=10)],
)
case(
    "P8_pause_kept_on_a_request_not_merged",
    "A pause record that merges with nothing keeps its metadata as it is.",
    history=[
        req(user("go")),
        real(call("approve_me", "c1"), call("f", "c2"), at=10),
        req(ret("f", "c2"), metadata={**PAUSED, "app": "x"}),
    ],
    expected=[
        req(user("go")),
        real(call("approve_me", "c1"), call("f", "c2"), at=10),
        req(ret("f", "c2"), metadata={**PAUSED, "app": "x"}),
    ],
    repair_last_response=False,
)

case(
    "J6_system_request_merges_with_prompt",
    "A leading system-prompt request merges with the user-prompt request after it.",
    history=[
        req(system("You are helpful.")),
        req(user("hi"), instructions="Be terse"),
        real(text("hello"), at=10),
    ],
    expected=[
        req(system("You are helpful."), user("hi"), instructions="Be terse"),
        real(text("hello"), at=10),
    ],
)

# === K: merging consecutive responses ===============================================================
case(
    "K_synthetic_responses_merge",
    "Three synthetic responses in a row merge into the first (its timestamp and fields kept).",
    history=[
        req(user("hi")),
        resp(text("a"), at=10),
        resp(text("b"), at=20, finish_reason="length"),
        resp(text("c"), at=30),
    ],
    expected=[req(user("hi")), resp(text("a"), text("b"), text("c"), at=10)],
)
case(
    "K2_provider_name_not_merged",
    "A response with provider_name set is not merged with a synthetic neighbour.",
    history=[req(user("hi")), resp(text("a"), at=10, provider_name="openai"), resp(text("b"), at=20)],
    expected=[req(user("hi")), resp(text("a"), at=10, provider_name="openai"), resp(text("b"), at=20)],
)
case(
    "K2b_model_name_not_merged",
    "A synthetic response followed by one with model_name set: not merged.",
    history=[req(user("hi")), resp(text("a"), at=10), real(text("b"), at=20)],
    expected=[req(user("hi")), resp(text("a"), at=10), real(text("b"), at=20)],
)
case(
    "K2c_provider_response_id_not_merged",
    "A response with provider_response_id set is not merged with a synthetic neighbour.",
    history=[req(user("hi")), resp(text("a"), at=10), resp(text("b"), at=20, provider_response_id="resp-9")],
    expected=[req(user("hi")), resp(text("a"), at=10), resp(text("b"), at=20, provider_response_id="resp-9")],
)

# === L: results first ===============================================================================
case(
    "L_parts_between_results_moved",
    "[Ret1, U, Ret2, U2] becomes [Ret1, Ret2, U, U2] in a request that is not merged.",
    history=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), at=10),
        req(ret("f", "c1"), user("u1"), ret("g", "c2"), user("u2")),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), at=10),
        req(ret("f", "c1"), ret("g", "c2"), user("u1"), user("u2")),
        real(text("ok"), at=20),
    ],
)
case(
    "L2_part_before_first_result_stays_synth_then_moved",
    "A part before the first result stays; the synthesized return joins the results; parts between move.",
    history=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), call("h", "c3"), at=10),
        req(user("before"), ret("f", "c1"), user("between"), ret("g", "c2"), user("after")),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), call("h", "c3"), at=10),
        req(
            user("before"),
            ret("f", "c1"),
            ret("g", "c2"),
            synth("h", "c3", at=10),
            user("between"),
            user("after"),
        ),
        real(text("ok"), at=20),
    ],
)
case(
    "L3_merge_hoists_results_first",
    "A user-prompt request followed by a return request: merged, the return is hoisted first.",
    history=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(user("wait")),
        req(ret("f", "c1")),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(ret("f", "c1"), user("wait")),
        real(text("ok"), at=20),
    ],
)

# === P: parallel calls ==============================================================================
case(
    "P_parallel_all_answered",
    "Three parallel calls all answered (in another order): unchanged.",
    history=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), call("h", "c3"), at=10),
        req(ret("h", "c3"), ret("f", "c1"), ret("g", "c2")),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), call("h", "c3"), at=10),
        req(ret("h", "c3"), ret("f", "c1"), ret("g", "c2")),
        real(text("ok"), at=20),
    ],
)
case(
    "P2_parallel_partly_answered",
    "Three parallel calls, two answered out of order: the missing one is synthesized after the last result.",
    history=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), call("h", "c3"), at=10),
        req(ret("h", "c3"), ret("f", "c1")),
        real(text("ok"), at=20),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), call("g", "c2"), call("h", "c3"), at=10),
        req(ret("h", "c3"), ret("f", "c1"), synth("g", "c2", at=10)),
        real(text("ok"), at=20),
    ],
)

# === M: tool_kind ===================================================================================
case(
    "M_custom_tool_kind_copied",
    "A custom tool_kind ('mykind') on a dangling call is copied to the synthesized return.",
    history=[req(user("go")), real(call("inventory", "c1", {"sku": "A1"}, tool_kind="mykind"), at=10)],
    expected=[
        req(user("go")),
        real(call("inventory", "c1", {"sku": "A1"}, tool_kind="mykind"), at=10),
        req(synth("inventory", "c1", at=10, tool_kind="mykind")),
    ],
    needs=frozenset({"custom_tool_kind"}),
)
case(
    "M2_core_tool_kind_copied",
    "A core tool_kind ('tool-search', args that fit it) on a dangling call is copied to the synth return.",
    history=[
        req(user("find a tool")),
        real(call("search_tools", "c1", {"queries": ["weather"]}, tool_kind="tool-search"), at=10),
        req(user("never mind")),
    ],
    expected=[
        req(user("find a tool")),
        real(call("search_tools", "c1", {"queries": ["weather"]}, tool_kind="tool-search"), at=10),
        req(synth("search_tools", "c1", at=10, tool_kind="tool-search"), user("never mind")),
    ],
    # 1.107.10 validates a 'tool-return' with tool_kind='tool-search' as a typed ToolSearchReturnPart,
    # whose content must be an object: the synthesized return's string content cannot load there.
    needs=frozenset({"core_tool_kind_return"}),
)

# === U: ui_visibility (2.78.0) ======================================================================
case(
    "U_ui_visibility_copied_to_synthesized_return",
    "A dangling call's ui_visibility is copied to its synthesized return (releases without the field "
    "ignore the key).",
    history=[
        req(user("go")),
        real(call("read_secrets", "c1", ui_visibility="private"), call("f", "c2"), at=10),
        req(user("next")),
    ],
    expected=[
        req(user("go")),
        real(call("read_secrets", "c1", ui_visibility="private"), call("f", "c2"), at=10),
        req(
            synth("read_secrets", "c1", at=10, ui_visibility="private"), synth("f", "c2", at=10), user("next")
        ),
    ],
)
case(
    "U2_ui_visibility_with_custom_tool_kind",
    "ui_visibility is copied beside a custom tool_kind (the return made through its constructor).",
    history=[
        req(user("go")),
        real(call("inventory", "c1", {"sku": "A1"}, tool_kind="mykind", ui_visibility="redacted"), at=10),
    ],
    expected=[
        req(user("go")),
        real(call("inventory", "c1", {"sku": "A1"}, tool_kind="mykind", ui_visibility="redacted"), at=10),
        req(synth("inventory", "c1", at=10, tool_kind="mykind", ui_visibility="redacted")),
    ],
    needs=frozenset({"custom_tool_kind"}),
)

# === X: other shapes ================================================================================
APP_META = {"app": "x", NS: {"k": 1}}  # kept as is on a request that is not merged
CHECKING = real(
    text("checking"), call("f", "c1", {"a": 1}), at=10, provider_name="openai", provider_response_id="resp-1"
)

case(
    "X_system_prompt_and_instructions",
    "System prompt and instructions ride along untouched while an interior call is closed.",
    history=[
        req(system("You are helpful."), user("hi"), instructions="Be terse"),
        real(call("f", "c1"), at=10),
        req(user("next"), instructions="Be terse"),
        real(text("ok"), at=20),
    ],
    expected=[
        req(system("You are helpful."), user("hi"), instructions="Be terse"),
        real(call("f", "c1"), at=10),
        req(synth("f", "c1", at=10), user("next"), instructions="Be terse"),
        real(text("ok"), at=20),
    ],
)
case(
    "X_thinking_part_kept_with_dangling_call",
    "A signed thinking part stays in the response; its dangling call is closed, not removed.",
    history=[
        req(user("hi")),
        real(thinking("let me look", signature="sig-1"), call("f", "c1"), at=10),
        req(user("next")),
    ],
    expected=[
        req(user("hi")),
        real(thinking("let me look", signature="sig-1"), call("f", "c1"), at=10),
        req(synth("f", "c1", at=10), user("next")),
    ],
)
case(
    "X_empty_history",
    "An empty history stays empty.",
    history=[],
    expected=[],
)
case(
    "X_only_request",
    "A history of a single request is unchanged.",
    history=[req(system("sys"), user("hi"), timestamp=1)],
    expected=[req(system("sys"), user("hi"), timestamp=1)],
)
case(
    "X_valid_history_unchanged",
    "A valid multi-turn history with request fields set is left exactly as it was.",
    history=[
        req(system("sys"), user("hi"), instructions="I", timestamp=1, metadata=APP_META, run_id="run-1"),
        CHECKING,
        req(ret("f", "c1", "done"), instructions="I", timestamp=11, run_id="run-1"),
        real(text("all done"), at=20),
        req(user("thanks"), timestamp=21, state="interrupted"),
        real(text("welcome"), at=30),
    ],
    expected=[
        req(system("sys"), user("hi"), instructions="I", timestamp=1, metadata=APP_META, run_id="run-1"),
        CHECKING,
        req(ret("f", "c1", "done"), instructions="I", timestamp=11, run_id="run-1"),
        real(text("all done"), at=20),
        req(user("thanks"), timestamp=21, state="interrupted"),
        real(text("welcome"), at=30),
    ],
)
case(
    "X_response_first_history",
    "A history that starts with a response holding a dangling call.",
    history=[real(call("f", "c1"), at=10), req(user("hi"))],
    expected=[real(call("f", "c1"), at=10), req(synth("f", "c1", at=10), user("hi"))],
)
case(
    "X_two_dangling_responses_in_a_row",
    "Two responses in a row with dangling calls: a new request between them; the next one closes the 2nd.",
    history=[req(user("go")), real(call("f", "c1"), at=10), real(call("g", "c2"), at=20), req(user("next"))],
    expected=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(synth("f", "c1", at=10)),
        real(call("g", "c2"), at=20),
        req(synth("g", "c2", at=20), user("next")),
    ],
)
case(
    "X_two_dangling_responses_in_a_row_false",
    "As above with repair_last_response=False: only the first response is closed.",
    history=[req(user("go")), real(call("f", "c1"), at=10), real(call("g", "c2"), at=20), req(user("next"))],
    expected=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(synth("f", "c1", at=10)),
        real(call("g", "c2"), at=20),
        req(user("next")),
    ],
    repair_last_response=False,
)
case(
    "X_long_multi_turn_mixed",
    "Long history: moved parts, interior dangling call, orphan, FIFO duplicates, merges and a trailing call.",
    history=[
        req(system("sys"), user("q1"), timestamp=1, instructions="I"),
        real(text("let me check"), call("search", "s1", {"q": "a"}), call("fetch", "s2", {"u": "x"}), at=10),
        req(ret("search", "s1", "r1"), user("also this"), ret("fetch", "s2", "r2"), timestamp=11),
        real(call("search", "s3", {"q": "b"}), at=20),
        req(user("q2"), timestamp=21),
        req(ret("lookup", "ghost"), user("q2b"), timestamp=22),
        real(thinking("hmm"), call("a", "d"), call("b", "d"), at=30),
        req(ret("a", "d")),
        resp(text("partial"), at=40),
        resp(text("rest"), at=50),
        req(user("q3"), timestamp=51),
        real(call("final", "f1"), at=60),
    ],
    expected=[
        req(system("sys"), user("q1"), timestamp=1, instructions="I"),
        real(text("let me check"), call("search", "s1", {"q": "a"}), call("fetch", "s2", {"u": "x"}), at=10),
        req(ret("search", "s1", "r1"), ret("fetch", "s2", "r2"), user("also this"), timestamp=11),
        real(call("search", "s3", {"q": "b"}), at=20),
        req(synth("search", "s3", at=20), user("q2"), user("q2b"), timestamp=22),
        real(thinking("hmm"), call("a", "d"), call("b", "d"), at=30),
        req(ret("a", "d"), synth("b", "d", at=30)),
        resp(text("partial"), text("rest"), at=40),
        req(user("q3"), timestamp=51),
        real(call("final", "f1"), at=60),
        req(synth("final", "f1", at=60)),
    ],
)


# Appended last, so the provider tests' every-tenth sample of the cases before it stays the same.
#: A history that OpenAI's reasoning continues: nothing for the repair to change.
FOREIGN_THINKING = [
    req(user("hi")),
    real(
        thinking("let me think", signature=OPENAI_SIGNATURE, provider="openai"),
        text("hello"),
        at=10,
        provider_name="openai",
    ),
    req(user("next")),
]
case(
    "X_thinking_signed_by_another_provider",
    "OpenAI's signed reasoning (its encrypted content, kept as the signature) stays as it is: the "
    "repair never touches thinking. Anthropic cannot verify that signature; its profile drops it.",
    history=FOREIGN_THINKING,
    expected=FOREIGN_THINKING,
)
case(
    "X_retry_and_return_for_one_call",
    "A retry prompt and a return for the same call in one request: two results for one call, both kept "
    "(OpenAI Chat refuses the second tool message; every profile keeps the first).",
    history=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(retry("bad arguments", name="f", id="c1"), ret("f", "c1", "ok")),
    ],
    expected=[
        req(user("go")),
        real(call("f", "c1"), at=10),
        req(retry("bad arguments", name="f", id="c1"), ret("f", "c1", "ok")),
    ],
)
#: A response of only another provider's native tool return, then an empty request: no model class
#: but Anthropic's sends any of it (1.0.0's OpenAIResponsesModel sends an empty `input`).
_FOREIGN_NATIVE_THEN_EMPTY = [resp(native_return("web_search", "srv1"), at=10), req()]
case(
    "X_foreign_native_return_then_empty_request",
    "Only a foreign native tool return, then an empty request: nothing to repair; the profiles whose "
    "model class sends none of it raise the clear 'nothing sendable' error.",
    history=_FOREIGN_NATIVE_THEN_EMPTY,
    expected=_FOREIGN_NATIVE_THEN_EMPTY,
)
#: pydantic-ai#7430's history: thinking between a response's calls, a retry answering the first call.
#: OpenAIResponsesModel sends the second thinking between the calls, before any output; a server that
#: reads calls and outputs as one run (DeepSeek) refuses call-a ("No tool output found for tool call").
_OWN_THINKING = {"signature": "enc", "provider_name": "openai"}
_SPLIT_BY_THINKING = [
    req(user("weather in three cities")),
    real(
        {"part_kind": "thinking", "content": "first two", "id": "rs_1", **_OWN_THINKING},
        call("get", "call-a", {"city": "Paris"}),
        call("get", "call-b", {"city": "Rome"}),
        {"part_kind": "thinking", "content": "and one more", "id": "rs_2", **_OWN_THINKING},
        call("get", "call-c", {"city": "Oslo"}),
        at=10,
        provider_name="openai",
    ),
    req(retry("bad city", name="get", id="call-a"), ret("get", "call-b"), ret("get", "call-c")),
]
case(
    "X_calls_split_by_thinking",
    "Thinking between a response's calls, every call answered (a retry for the first): nothing to "
    "repair. Only a Responses-compatible server that groups calls with outputs refuses the wire split; "
    "its profile (a model such as openai-responses:deepseek-v4-flash) moves the calls after the thinking.",
    history=_SPLIT_BY_THINKING,
    expected=_SPLIT_BY_THINKING,
)
#: pydantic-ai#7878's shape in a stored history: a request of only a tool reveal between a call and its
#: result. AnthropicModel sends the reveal as a `system` entry, which between the tool_use and its
#: tool_result the API refuses; the repair merges the requests (result first), as upstream's does.
_REVEAL = {"part_kind": "tool-availability-delta", "tools_added": ["get"], "tool_call_id": None}
case(
    "X_reveal_between_call_and_result",
    "A tool-availability delta alone in a request between a call and its result (2.23.0+): the requests "
    "merge, the result first, so no system entry can go between the tool_use and its tool_result.",
    history=[
        req(user("hi")),
        real(call("get", "g1", {"city": "x"}), at=10),
        req(_REVEAL),
        req(ret("get", "g1")),
    ],
    expected=[req(user("hi")), real(call("get", "g1", {"city": "x"}), at=10), req(ret("get", "g1"), _REVEAL)],
    needs=frozenset({"tool_availability_delta"}),
)
