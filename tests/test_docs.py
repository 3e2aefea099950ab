"""Every example in README.md and docs/ runs as written, on every pinned release.

The conventions (docs/contributing/docs.md says them to writers):

- A ```python block runs alone, as a script, with its own imports and inputs: the histories in
  examples/, and a model built in the block (pydantic-ai's ``TestModel`` stands in for yours). Its
  working directory is a temporary copy of examples/, so it may write files. Every agent run it
  leaves in a variable must have stored a history a strict provider accepts (``strict.py``).
- A ```console block is a session of the command line: each ``$ histfix ...`` line runs (in
  process), and what it prints, stdout then stderr, must be the lines under it exactly, where
  ``...`` inside a line stands for any text of that line and a line of ``...`` for any lines.
  ``$ echo $?`` prints the exit status of the command before it, as a shell does; a ``# ...``
  comment ends a command line. Its working directory holds a copy of examples/ and the three
  small stores docs/stores.md builds from it (``chats/``, ``chats.jsonl``, ``app.db``), so the
  store commands run against real stores.
- ```bash and ```text blocks are shown, not run: commands with placeholders, long campaigns,
  output that needs the network or another release.

The tables of profile passes and of model-name prefixes in docs/providers.md, of which path runs
where and of the release table in docs/backends.md, and of exit statuses in docs/cli.md, are
generated from the code:
``PYTHONPATH=src:tests/support python tests/test_docs.py`` rewrites them, and a test fails when one drifts.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import histfix
from histfix._cli.commands import main

from dsl import call, docs_block, req, resp, to_json, user
from strict import StrictModel, pairing_problems

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, its text, and where it starts."""

    page: str
    line: int
    language: str
    code: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(language: str) -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            if match.group(1) == language:
                line = text.count("\n", 0, match.start()) + 1
                found.append(Block(str(page.relative_to(ROOT)), line, language, match.group(2)))
    return found


PYTHON = blocks("python")
CONSOLE = blocks("console")


@pytest.fixture
def in_examples_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding a copy of examples/, as a clone has it (blocks may write there)."""
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_pages_have_examples() -> None:
    assert (ROOT / "docs" / "index.md") in PAGES
    # the extraction still finds the README's own examples, the ones a new user runs first
    assert [b.page for b in PYTHON].count("README.md") == 1
    assert [b.page for b in CONSOLE].count("README.md") == 1


#: Optional extras a block may import: such a block runs where the extra is installed (the Dask
#: page's in the `stores` session, through tests/store/test_dask.py) and is skipped elsewhere. So
#: does a block importing what only newer pydantic-ai releases have (the ConversationStore page's).
EXTRA_MODULES = ("distributed", "dask", "pydantic_ai.conversation_store")


def missing_extra(block: Block) -> str | None:
    """The first optional module the block imports that is not installed here, if any."""
    for module in EXTRA_MODULES:
        imports = re.search(rf"^\s*(?:from|import) {re.escape(module)}\b", block.code, flags=re.MULTILINE)
        if imports and importlib.util.find_spec(module) is None:
            return module
    return None


@pytest.mark.parametrize("block", PYTHON, ids=str)
def test_python_block_runs_as_written(block: Block, in_examples_copy: Path) -> None:
    missing = missing_extra(block)
    if missing is not None:
        pytest.skip(f"{block} imports {missing}, not installed here (an extra)")
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    exec(compile(block.code, str(block), "exec"), namespace)
    runs = [v for v in namespace.values() if callable(getattr(v, "all_messages", None))]
    for run in runs:
        assert pairing_problems(run.all_messages()) == [], f"{block}: the run stored a broken history"


def session(block: Block) -> list[tuple[str, str]]:
    """The block's commands, each with the output shown under it."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.code.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"{block}: output before the first `$ ` command"
            steps[-1][1].append(line)
    return [(command, "".join(f"{line}\n" for line in shown)) for command, shown in steps]


def shown_as_pattern(shown: str) -> re.Pattern[str]:
    """``shown`` as a regex: ``...`` in a line is any text of that line, a line of ``...`` any lines."""
    parts = []
    for line in shown.splitlines():
        if line == "...":
            parts.append("(?:.*\n)*?")
        else:
            parts.append(re.escape(line).replace(re.escape("..."), ".*?") + "\n")
    return re.compile("".join(parts))


#: The block of docs/stores.md that builds the stores its commands (and every console block) use.
STORES_BLOCK = "# Three small stores of the histories in examples/"


@pytest.fixture
def with_example_stores(in_examples_copy: Path) -> Path:
    """The examples copy, and beside it the stores docs/stores.md builds from it, by its own block."""
    exec(docs_block(STORES_BLOCK), {"__name__": "__docs__"})
    return in_examples_copy


@pytest.mark.parametrize("block", CONSOLE, ids=str)
def test_console_block_prints_what_it_shows(
    block: Block, with_example_stores: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status: int | None = None
    for command, shown in session(block):
        if command == "echo $?":
            assert status is not None, f"{block}: `echo $?` before any command"
            out, err = f"{status}\n", ""
        else:
            program, *argv = shlex.split(command, comments=True)
            assert program == "histfix", f"{block}: console blocks run histfix only, not {command!r}"
            status = main(argv)
            out, err = capsys.readouterr()
        assert shown_as_pattern(shown).fullmatch(out + err), f"{block}: `{command}` printed\n{out}{err}"


def test_the_example_stores_hold_the_examples(with_example_stores: Path) -> None:
    """The stores the console blocks use: each holds every history of examples/, under its name."""
    import json
    import sqlite3

    examples = {path.stem: json.loads(path.read_bytes()) for path in EXAMPLES.glob("*.json")}
    assert len(examples) == 4
    folder = {path.stem: json.loads(path.read_bytes()) for path in Path("chats").glob("*.json")}
    lines = [json.loads(line) for line in Path("chats.jsonl").read_text().splitlines()]
    with sqlite3.connect("app.db") as db:
        rows = {key: json.loads(value) for key, value in db.execute("SELECT id, messages FROM chats")}
    assert folder == {line["id"]: line["messages"] for line in lines} == rows == examples


def test_pattern_matching_is_exact_but_for_the_ellipses() -> None:
    assert shown_as_pattern("a ... c\n").fullmatch("a b c\n")
    assert not shown_as_pattern("a ... c\n").fullmatch("a b c\nd\n")
    assert shown_as_pattern("a\n...\nz\n").fullmatch("a\nb\nc\nz\n")
    assert not shown_as_pattern("a\nz\n").fullmatch("a\nZ\n")


# --- behaviour beyond "it runs": the upgrade guide's function against a strict provider --------------

ABORTED = to_json([req(user("test")), resp(call("retrieve_documents", "call_1", {"q": "x"}), at=3)])


def test_upgrade_guide_code_answers_a_strict_provider(in_examples_copy: Path) -> None:
    """``answer`` from docs/upgrading.md, its globals rebound to a strict model and a broken store."""
    from pydantic_ai import Agent

    namespace: dict[str, Any] = {"__name__": "__docs__"}
    exec(docs_block("def answer("), namespace)
    model = StrictModel()
    namespace["agent"] = Agent(model.model, **histfix.agent_options(keep_last_turns=20))
    namespace["store"] = {"c1": ABORTED}
    assert namespace["answer"]("c1", "new question") == "done"
    assert namespace["answer"]("c1", "and another") == "done"
    assert len(model.received) == 2


# --- the API reference ------------------------------------------------------------------------------


def test_the_api_reference_documents_every_exported_name() -> None:
    reference = (ROOT / "docs" / "reference.md").read_text()
    listed = set(re.findall(r"^::: histfix\.(\w+)$", reference, flags=re.MULTILINE))
    assert listed == set(histfix.__all__) - {"__version__"}


def test_exported_docstrings_have_no_sphinx_roles() -> None:
    """mkdocstrings renders docstrings as Markdown, where ``:func:`x``` shows up literally."""
    role = re.compile(r":(?:func|class|meth|attr|mod|data):`")
    for name in histfix.__all__:
        obj = getattr(histfix, name)
        documented = (
            [obj, *(v for k, v in vars(obj).items() if not k.startswith("_"))]
            if isinstance(obj, type)
            else [obj]
        )
        for item in documented:
            doc = item.__doc__ if callable(item) or isinstance(item, (type, property)) else None
            assert not role.search(doc or ""), f"histfix.{name}: a Sphinx role in its docstring"


# --- "Provider profiles": the profile passes, generated from the code -------------------------------

PROVIDERS_PAGE = ROOT / "docs" / "providers.md"
BEGIN = "<!-- profile passes: generated from histfix._profiles.registry.RULES"
END = "<!-- end of profile passes -->"


def profile_passes() -> str:
    """The table of profile passes, from ``_profiles.RULES`` (name, stage, APIs, why)."""
    from histfix._profiles.registry import RULES
    from histfix._profiles.targets import PROVIDER_APIS

    if not RULES:
        return "No profile passes are registered: every profile is the default repair.\n"
    rows = ["| pass | runs | for | why |", "|---|---|---|---|"]
    for rule in RULES:
        apis = ", ".join(api for api in PROVIDER_APIS if api in rule.apis)
        stage = "before the repair" if rule.stage == "before" else "after the repair"
        why = " ".join(rule.why.split()).replace("|", "\\|")
        rows.append(f"| `{rule.name}` | {stage} | {apis} | {why} |")
    return "\n".join(rows) + "\n"


PREFIXES_BEGIN = "<!-- model-name prefixes: generated from histfix._profiles.targets"
PREFIXES_END = "<!-- end of model-name prefixes -->"


def prefix_table() -> str:
    """The table of model-name prefixes, from ``_profiles.targets``: each API's prefixes, then the
    prefixes that get no profile with why (the same for every installed release)."""
    from histfix._profiles import targets
    from histfix._release import table

    rows = ["| profile | prefixes |", "|---|---|"]
    for api in targets.PROVIDER_APIS:
        names = [f"`{api}`"]
        if api == "openai-responses":
            names.append(f"`openai` (from {table.OPENAI_PREFIX_IS_RESPONSES.release}; `openai-chat` before)")
        names += [
            f"`{prefix}`" + (" (unproven)" if prefix in targets.UNPROVEN_PREFIXES else "")
            for prefix, mapped in sorted(targets._PREFIXES.items())
            if mapped == api and prefix != api
        ]
        rows.append(f"| {api} | {', '.join(names)} |")
    for prefix, why in sorted(targets.NO_PROFILE.items()):
        rows.append(f"| none: {why} | `{prefix}` |")
    return "\n".join(rows) + "\n"


# --- "Which path runs where": the backend rule and the release table, generated from the code -------

BACKENDS_PAGE = ROOT / "docs" / "backends.md"
BACKENDS_BEGIN = "<!-- which path runs where: generated from histfix._release.table"
BACKENDS_END = "<!-- end of which path runs where -->"
NOTES_BEGIN = "<!-- release table: generated from histfix._release.table.NOTES"
NOTES_END = "<!-- end of release table -->"


def backend_table() -> str:
    """Which path ``backend="auto"`` takes, release range by release range, and why: the reasons
    ``histfix info`` prints, from the backend rule and the release table's ``REPAIR_FIXES``."""
    from histfix._release import table
    from histfix._release.backend import choose_backend

    first = table.REPAIR_MESSAGES.release
    bounds = [table.OLDEST, first, *(fix.release for fix in table.REPAIR_FIXES)]
    rows = ['| pydantic-ai-slim | `backend="auto"` runs | why |', "|---|---|---|"]
    for start, until in itertools.pairwise(bounds):
        _, why = choose_backend(start, start != table.OLDEST)  # "pydantic-ai X has ..."
        rows.append(f"| {table.span(start, until)} | histfix's own walk | {why.split(' ', 2)[2]} |")
    current = table.UPSTREAM_REPAIR_CURRENT
    rows.append(
        f"| {current.release} and newer | upstream `repair_messages` | {current.what} ({current.source}) |"
    )
    return "\n".join(rows) + "\n"


def release_table() -> str:
    """Every entry of the release table: the release, what changed, and how histfix tells."""
    from histfix._release import table

    how = {
        "detected": "detected (present or not)",
        "compared": "release compared (same name, new behaviour)",
        "noted": "none: the same repair on every release",
    }
    rows = ["| release | what changed | histfix tells by |", "|---|---|---|"]
    for note in sorted(table.NOTES, key=lambda note: tuple(map(int, note.release.split(".")))):
        release = note.release if not note.until else table.span(note.release, note.until)
        what = note.what.replace("|", "\\|") + (f" (before: {note.before})" if note.before else "")
        rows.append(f"| [{release}]({note.link}) | {what} | {how[note.how]}: `{note.name}` |")
    return "\n".join(rows) + "\n"


# --- "Exit status": the command line's exit statuses, generated from the code ------------------------

CLI_PAGE = ROOT / "docs" / "cli.md"
EXITS_BEGIN = "<!-- exit statuses: generated from histfix._cli.exits.MEANINGS"
EXITS_END = "<!-- end of exit statuses -->"
#: "exit 2", "exits 1", "exit status 130", "Exit status 0", "exit is 1": a code the prose names.
EXIT_IN_PROSE = re.compile(r"\bexit(?:s| status| is)? (\d+)\b", flags=re.IGNORECASE)


def exit_table() -> str:
    """The table of exit statuses, from ``histfix._cli.exits.MEANINGS``."""
    from histfix._cli.exits import MEANINGS

    rows = ["| status | means |", "|---|---|"]
    rows += [f"| {code} | {meaning.replace('|', chr(92) + '|')} |" for code, meaning in MEANINGS.items()]
    return "\n".join(rows) + "\n"


def test_every_exit_status_the_docs_name_is_in_the_table() -> None:
    from histfix._cli.exits import MEANINGS

    named = {
        (str(page.relative_to(ROOT)), int(code))
        for page in PAGES
        for code in EXIT_IN_PROSE.findall(page.read_text())
    }
    assert named, "the pattern finds no exit status in the docs"
    assert {(page, code) for page, code in named if code not in MEANINGS} == set()


def generated_section(page: str, begin: str = BEGIN, end: str = END) -> tuple[int, int]:
    """Where a generated table sits in ``page``: after the ``begin`` line, up to ``end``."""
    start = page.index("\n", page.index(begin)) + 1
    return start, page.index(end, start)


#: Each generated table: its page, its markers and what it is made of.
GENERATED = (
    (PROVIDERS_PAGE, BEGIN, END, profile_passes),
    (PROVIDERS_PAGE, PREFIXES_BEGIN, PREFIXES_END, prefix_table),
    (BACKENDS_PAGE, BACKENDS_BEGIN, BACKENDS_END, backend_table),
    (BACKENDS_PAGE, NOTES_BEGIN, NOTES_END, release_table),
    (CLI_PAGE, EXITS_BEGIN, EXITS_END, exit_table),
)


@pytest.mark.parametrize(
    ("path", "begin", "end", "table"),
    GENERATED,
    ids=["profile passes", "prefixes", "backends", "releases", "exit statuses"],
)
def test_the_generated_tables_are_the_codes(path: Path, begin: str, end: str, table: Any) -> None:
    page = path.read_text()
    start, stop = generated_section(page, begin, end)
    assert page[start:stop] == table(), (
        f"{path.relative_to(ROOT)} is stale: run `PYTHONPATH=src:tests/support python tests/test_docs.py`"
    )


if __name__ == "__main__":  # rewrite the generated tables (PYTHONPATH=src:tests/support)
    for page_path in dict.fromkeys(path for path, *_ in GENERATED):
        text = page_path.read_text()
        for path, begin, end, table in GENERATED:
            if path == page_path:
                start, stop = generated_section(text, begin, end)
                text = text[:start] + table() + text[stop:]
        page_path.write_text(text)
        print(f"wrote the generated tables into {page_path}")
