"""`histfix compare`: the pure parts (describing, lettering, diffing, rendering), the probe and the
strict provider on this release, and the command's errors. The real runs over four releases build
their own environments, whatever this session installed: tests/compare/test_real_environments.py (`tools`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from histfix._check.strict import strict_provider_errors
from histfix._cli.commands import main
from histfix._cli.compare_render import Style, as_json, changed, diff_lines, label, render, render_table
from histfix._compare import environments as _compare
from histfix._compare.outcome import Outcome, describe
from histfix._compare.probe import CONTINUE, PLAIN, probe, prompt_for
from histfix._compare.probe import REPAIRED as HISTFIX
from histfix._release.pinned import NEWEST, PINNED_RELEASES
from test_agent_e2e import ABORTED

from conftest import PYDANTIC_AI
from corpus import CASES
from dsl import INTERRUPTED, MARKER, Case, call, load_history, req, resp, ret, text, to_json, user
from strict import pairing_problems

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples"

PLAIN_STYLE = Style(color=False)

BROKEN = [req(user("q")), resp(call("get", "c1", {"k": 1}), at=5), req(user("next"))]
REPAIRED = [
    req(user("q")),
    resp(call("get", "c1", {"k": 1}), at=5),
    req(ret("get", "c1", INTERRUPTED), user("next")),
]
REPAIRED[2]["parts"][0]["metadata"] = {MARKER: True}


def observation(release: str, sent: list[Any] | None, problems: list[str], raised: str | None = None) -> Any:
    """A probe's record, as the probe writes it (histfix always returns REPAIRED here)."""
    return {
        "release": release,
        "backend": "histfix",
        PLAIN: {"raised": raised, "messages": sent, "problems": problems},
        HISTFIX: {"raised": None, "messages": REPAIRED, "problems": []},
    }


OBSERVATIONS = [
    observation("1.0.0", BROKEN, ["No tool output found for function call c1 (get)."]),
    observation("2.9.1", BROKEN, ["No tool output found for function call c1 (get)."]),
    observation("2.10.0", REPAIRED, []),
    observation("2.11.0", None, [], raised="UserError: Cannot provide a new user prompt.\nmore"),
]


def test_describe_numbers_messages_and_leaves_out_timestamps() -> None:
    assert describe(BROKEN) == [
        "  0 request   user-prompt    q",
        '  1 response  tool-call      get(c1) {"k": 1}',
        "  2 request   user-prompt    next",
    ]
    assert describe([{"kind": "request", "parts": []}]) == ["  0 request   (no parts)"]


def test_letters_follow_first_appearance_and_changes_are_against_the_row_above() -> None:
    letters = label(
        [Outcome(None, ("a",), 1, ()), Outcome(None, ("b",), 1, ()), Outcome(None, ("a",), 1, ())]
    )
    assert letters == ["A", "B", "A"]
    assert changed(letters) == [False, True, True]


def test_table_letters_and_stars_each_side() -> None:
    table = render_table(OBSERVATIONS, PLAIN_STYLE)
    assert table[0].split("  ")[0] == "release"
    rows = {line.split()[0]: line for line in table[2:]}
    assert "A  sends 3 messages · strict provider: 400 (1 problem)" in rows["1.0.0"]
    assert "A  sends 3 messages · strict provider: 400" in rows["2.9.1"]
    assert "B* sends 3 messages · valid" in rows["2.10.0"]
    assert "C* raises UserError: Cannot provide a new user prompt." in rows["2.11.0"]
    assert all("A  returns 3 messages · valid" in row for row in rows.values())
    column = table[0].index("histfix.repair returns")
    assert all(line[column:].startswith("A  returns") for line in table[2:])  # columns line up


def test_highlighting_is_only_on_changed_cells() -> None:
    colored = render_table(OBSERVATIONS, Style(color=True))
    assert "\033[" not in colored[2] + colored[3]
    assert "\033[1;33mB* sends" in colored[4]


def test_diff_shows_changed_lines_with_context() -> None:
    assert diff_lines(describe(BROKEN), describe(REPAIRED), PLAIN_STYLE) == [
        '   1 response  tool-call      get(c1) {"k": 1}',
        "-  2 request   user-prompt    next",
        "+  2 request   tool-return    get(c1) The tool call was interrupted before a result w…  [synthesized]",
        "+              user-prompt    next",
    ]


def test_render_lists_each_variant_once() -> None:
    text = render("h.json", None, OBSERVATIONS, PLAIN_STYLE)
    assert text.startswith("h.json: what each release does with it (run_sync(None, message_history=history)")
    assert "plain pydantic-ai sends, A (1.0.0, 2.9.1): sends 3 messages" in text
    assert "    No tool output found for function call c1 (get)." in text
    assert "plain pydantic-ai sends, B (2.10.0): sends 3 messages · valid" in text
    assert "    raises UserError: Cannot provide a new user prompt.\nmore" in text
    assert "histfix.repair returns, A (1.0.0, 2.9.1, 2.10.0, 2.11.0)" in text


def test_a_history_a_release_cannot_load() -> None:
    refused = {"raised": "cannot load the history: 0.parts.0: bad part", "messages": None, "problems": []}
    broken = {"release": "1.0.0", "backend": "histfix", PLAIN: refused, HISTFIX: refused}
    assert Outcome.of(broken, PLAIN).summary(PLAIN) == "raises cannot load the history: 0.parts.0: bad part"
    assert as_json("h.json", None, [broken])["releases"][0][HISTFIX]["messages"] is None


def test_json_carries_letters_changes_and_messages() -> None:
    data = as_json("h.json", "next", OBSERVATIONS)
    assert (data["history"], data["prompt"]) == ("h.json", "next")
    third = data["releases"][2]
    assert third[PLAIN]["variant"] == "B" and third[PLAIN]["changed"] is True
    assert third[PLAIN]["messages"] == REPAIRED
    assert third[HISTFIX]["changed"] is False
    json.dumps(data)  # plain data throughout


def test_probe_on_this_release_shows_the_2_10_boundary() -> None:
    seen = probe(to_json(ABORTED), None)  # the seeds' aborted run
    plain, fixed = seen[PLAIN], seen[HISTFIX]
    assert plain["raised"] is None and plain["messages"] is not None
    repairs_on_the_wire = Version("2.10.0") <= PYDANTIC_AI
    assert bool(plain["problems"]) is not repairs_on_the_wire
    assert fixed["problems"] == []
    assert fixed["messages"][2]["parts"][0]["metadata"] == {MARKER: True}


def test_probe_records_a_refused_run() -> None:
    seen = probe(to_json(ABORTED[:2]), "new prompt")  # unanswered calls, then a new prompt
    assert seen[PLAIN]["messages"] is None
    assert seen[PLAIN]["raised"].startswith("UserError: Cannot provide a new user prompt")


FINISHED = [req(user("q")), resp(text("the answer"), at=1)]  # the most common stored shape


def test_a_finished_conversation_is_continued_with_a_neutral_prompt() -> None:
    assert prompt_for(json.loads(to_json(FINISHED)), None) == CONTINUE
    assert prompt_for(json.loads(to_json(FINISHED)), "mine") == "mine"
    assert prompt_for(json.loads(to_json(ABORTED[:2])), None) is None  # open calls: the run goes on
    assert prompt_for(json.loads(to_json([req(user("q"))])), None) is None  # a pending request is sent
    assert prompt_for([], None) is None


def test_probe_on_a_finished_conversation() -> None:
    raw = to_json(FINISHED)
    seen = probe(raw, prompt_for(json.loads(raw), None))
    plain = seen[PLAIN]
    assert plain["raised"] is None and plain["problems"] == []
    assert [m["kind"] for m in plain["messages"]] == ["request", "response", "request"]
    assert plain["messages"][-1]["parts"][-1]["content"] == CONTINUE
    unprompted = probe(raw, None)[PLAIN]  # pydantic-ai asks no model: said so, not an IndexError
    assert unprompted == {
        "raised": "the run ended without a model request: nothing was sent",
        "messages": None,
        "problems": [],
    }


def test_the_output_says_a_finished_conversation_was_continued() -> None:
    text_out = render("h.json", CONTINUE, OBSERVATIONS, PLAIN_STYLE, continued=True)
    assert text_out.splitlines()[:2] == [
        "h.json: what each release does with it (run_sync('Continue.', message_history=history), "
        "a capturing FunctionModel, no provider)",
        "A finished conversation sends nothing without a new prompt: it is continued with 'Continue.' "
        "(choose another with --prompt).",
    ]
    data = as_json("h.json", CONTINUE, OBSERVATIONS, continued=True)
    assert (data["prompt"], data["prompt_defaulted"]) == (CONTINUE, True)


def test_probe_reports_a_history_this_release_cannot_load() -> None:
    seen = probe(b'[{"kind": "request", "parts": [{"part_kind": "no-such-part"}]}]', None)
    for side in (PLAIN, HISTFIX):
        assert seen[side]["messages"] is None
        assert seen[side]["raised"].startswith("cannot load the history: ")


# --- the strict provider ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_strict_provider_agrees_with_the_suites_oracle(case: Case) -> None:
    """histfix compare's strict provider is the suite's oracle (tests/support/strict.py), written twice."""
    history = load_history(case)
    assert strict_provider_errors(history) == pairing_problems(history)


# --- the command: arguments and errors ----------------------------------------------------------------


def test_the_pinned_list_is_the_noxfile_list() -> None:
    text = (ROOT / "noxfile.py").read_text()
    assert "from histfix._release import pinned" in text and "PINNED_RELEASES" in text  # the noxfile loads it
    assert _compare.parse_releases(None) == PINNED_RELEASES
    assert NEWEST == PINNED_RELEASES[-1] == max(PINNED_RELEASES, key=Version)


def test_releases_are_sorted_and_deduplicated() -> None:
    assert _compare.parse_releases("2.68.0, 1.107.10,2.9.1,2.68.0") == ["1.107.10", "2.9.1", "2.68.0"]


@pytest.mark.parametrize(
    ("releases", "message"),
    [
        ("2.9.1,two", "--releases: 'two' is not a release number (e.g. 2.9.1)"),
        ("0.8.0", "--releases: 0.8.0 is older than 1.0.0, the oldest release histfix supports"),
        (",", "--releases needs at least one release"),
    ],
)
def test_bad_release_names_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], releases: str, message: str
) -> None:
    code = main(["compare", str(EXAMPLES / "aborted_mid_tool.json"), "--releases", releases])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith(f"histfix: {message}") and err.count("\n") == 1


def test_missing_uv_names_the_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("HISTFIX_UV", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no uv on PATH
    monkeypatch.setitem(sys.modules, "uv", None)  # and no uv package: importing it fails
    code = main(["compare", str(EXAMPLES / "aborted_mid_tool.json"), "--releases", "2.9.1"])
    assert code == 2
    assert capsys.readouterr().err == (
        "histfix: histfix compare needs uv: pip install 'histfix[compare]' (or put uv on PATH)\n"
    )


def test_a_file_that_is_not_a_history_is_refused_before_any_environment(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cut.json"
    path.write_text('[{"kind": "req')
    assert main(["compare", str(path), "--releases", "2.9.1"]) == 2
    assert capsys.readouterr().err.endswith("the document ends early (truncated?)\n")
    assert main(["compare", str(path), "--find-links", str(tmp_path / "nowhere")]) == 2


# --- compare with uv -------------------------------------------------------------------------------
# (the real runs, which build environments of four releases, are in tests/compare/test_real_environments.py:
# release-independent, `tools` runs them once)


def _uv() -> str | None:
    try:
        return _compare.find_uv()
    except _compare.CompareError:
        return None


def test_an_unusable_cache_folder_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    history = str(EXAMPLES / "aborted_mid_tool.json")
    code = main(["compare", history, "--releases", "2.9.1", "--cache-dir", str(blocker / "envs")])
    err = capsys.readouterr().err
    if _uv() is None:
        assert "needs uv" in err
    else:
        assert err == f"histfix: {blocker / 'envs'}: cannot create the environment cache (Not a directory)\n"
    assert code == 2
