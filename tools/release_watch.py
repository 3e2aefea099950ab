"""The release watch behind `nox -s latest`: what a pydantic-ai-slim release changes, against the newest pinned.

Usage (the report, run by the newest release's Python; `nox -s latest` sets it up):
    python tools/release_watch.py report --pinned-python PATH [--examples N] [--workdir DIR]

It runs its own steps in two environments (each one holds histfix, hypothesis and one release):
    python tools/release_watch.py facts OUT            the release's version, schema and metadata keys
    python tools/release_watch.py write N OUT          N schema-drawn histories and the corpus, as written
    python tools/release_watch.py probe IN OUT         each history loaded with histfix.load_json, dumped,
                                                       repaired by upstream and by histfix's walk

and prints five sections, then exits 1 when any of them holds a line (0 when all are empty):

1. schema: the part kinds, message kinds, fields and literal values the newest release's
   ``ModelMessagesTypeAdapter.json_schema()`` adds or drops against the pinned one's, and the
   metadata keys (``*_KEY`` constants of ``pydantic_ai.messages``) it adds or drops;
2. walk against upstream on the newest release: histfix's walk beside ``repair_messages``, both
   ``repair_last_response`` values, dump-equal and ``==``, on histories drawn from the newest
   release's schema and on the corpus;
3. upstream's repair changed: the pinned release's ``repair_messages`` beside the newest's, on the
   same histories (the newest's output loaded on the pinned release, so only what it can hold counts);
4. loading the newest release's writing on the pinned release with ``histfix.load_json``;
5. loading the pinned release's writing on the newest release with ``histfix.load_json``.

Differences are grouped by path with list indexes left out (``[].parts[].ui_visibility``), each with
its count and first example. The pure parts (:func:`schema_changes`, :func:`grouped`, :func:`render`)
are tested in tests/tools/test_release_watch.py.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

SUPPORT = Path(__file__).resolve().parent.parent / "tests" / "support"
sys.path.insert(0, str(SUPPORT))

from json_diff import differences  # noqa: E402  (tests/support holds the diff and the generators)
from schema_summary import Summary, summarize  # noqa: E402

#: Each step's time limit in its environment (drawing and probing a few hundred histories: a minute).
STEP_TIMEOUT = 1800
#: Examples a group of differences shows.
EXAMPLES_SHOWN = 1


# --- pure: what the report says ---------------------------------------------------------------------


def _values(values: list[Any]) -> str:
    return ", ".join(repr(v) for v in values)


def schema_changes(old: Summary, new: Summary, old_keys: list[str], new_keys: list[str]) -> list[str]:
    """What ``new`` (a release's summarized schema) adds to or drops from ``old``, one line each.

    A kind new as a whole is one line listing its fields; within a kind both have, each field
    and each literal value added or dropped is a line of its own.
    """
    lines = []
    for kind in sorted(set(new) - set(old)):
        own = [field for field in new[kind] if "." not in field]
        lines.append(f"new {kind}: fields {', '.join(own)}")
    for kind in sorted(set(old) - set(new)):
        lines.append(f"dropped {kind}")
    for kind in sorted(set(old) & set(new)):
        before, after = old[kind], new[kind]
        for field in sorted(set(after) - set(before)):
            values = f" (values {_values(after[field])})" if after[field] else ""
            lines.append(f"new field {kind}.{field}{values}")
        for field in sorted(set(before) - set(after)):
            lines.append(f"dropped field {kind}.{field}")
        for field in sorted(set(before) & set(after)):
            added = [v for v in after[field] if v not in before[field]]
            dropped = [v for v in before[field] if v not in after[field]]
            if added:
                lines.append(f"new value {kind}.{field}: {_values(added)}")
            if dropped:
                lines.append(f"dropped value {kind}.{field}: {_values(dropped)}")
    lines += [f"new metadata key: {key!r}" for key in sorted(set(new_keys) - set(old_keys))]
    lines += [f"dropped metadata key: {key!r}" for key in sorted(set(old_keys) - set(new_keys))]
    return lines


def _pattern(line: str) -> str:
    """A difference line's path with list indexes left out: what groups differences."""
    return re.sub(r"\[\d+\]", "[]", line.split(": ", 1)[0])


def grouped(found: Mapping[str, list[str]], by: Callable[[str], str] = _pattern) -> list[str]:
    """``{case name: difference lines}`` as one line per group (``by``: the line's path with
    list indexes left out), most cases first: the count of cases, and the first example."""
    groups: dict[str, list[str]] = {}
    for name, lines in found.items():
        for line in lines:
            examples = groups.setdefault(by(line), [])
            if not examples or examples[-1].split(": ", 1)[0] != name:
                examples.append(f"{name}: {line}")
    return [
        f"{pattern}  ({len(examples)} cases; e.g. {'; '.join(examples[:EXAMPLES_SHOWN])})"
        for pattern, examples in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    ]


SECTIONS = (
    "schema: what the newest release declares that the pinned one does not (and the reverse)",
    "walk against upstream on the newest release (schema-drawn and corpus histories, both flags)",
    "upstream's repair changed: the pinned release's repair_messages against the newest's",
    "histories the newest release writes, loaded on the pinned one with histfix.load_json",
    "histories the pinned release writes, loaded on the newest one with histfix.load_json",
)


def render(pinned: str, newest: str, sections: list[list[str]]) -> tuple[str, int]:
    """The report's text and exit status (1 when any section holds a line)."""
    out = [f"release watch: pydantic-ai-slim {newest} (newest) against {pinned} (newest pinned)"]
    for number, (title, lines) in enumerate(zip(SECTIONS, sections, strict=True), 1):
        out.append(f"\n{number}. {title}: {len(lines) or 'no'} difference{'s' if len(lines) != 1 else ''}")
        out += [f"   {line}" for line in lines]
    status = int(any(sections))
    out.append("\nverdict: " + ("differences found (exit 1)" if status else "nothing differs (exit 0)"))
    return "\n".join(out), status


# --- the steps run inside one release's environment --------------------------------------------------


def facts(out: Path) -> None:
    from importlib.metadata import version

    from pydantic_ai import messages as pai

    import schema_strategies

    schema = pai.ModelMessagesTypeAdapter.json_schema()
    keys = list(schema_strategies.release_metadata_keys())
    out.write_text(
        json.dumps({"version": version("pydantic-ai-slim"), "schema": schema, "metadata_keys": keys})
    )


def write(count: int, out: Path) -> None:
    """``count`` schema-drawn histories and the corpus's loadable cases, as this release dumps them."""
    from pydantic_ai import messages as pai

    import schema_strategies
    from corpus import CASES
    from dsl import to_json

    named = {f"drawn {i}": h for i, h in enumerate(schema_strategies.drawn(count))}
    written = {}
    with schema_strategies.quiet():
        for name, history in named.items():
            written[name] = json.loads(
                pai.ModelMessagesTypeAdapter.dump_json(schema_strategies.load(history))
            )
        for case in CASES:
            try:
                loaded = pai.ModelMessagesTypeAdapter.validate_json(to_json(case.history))
            except ValueError:
                continue  # a case needing what this release lacks
            written[f"corpus {case.name}"] = json.loads(pai.ModelMessagesTypeAdapter.dump_json(loaded))
    out.write_text(json.dumps(written))


def probe(source: Path, out: Path) -> None:
    """Per history: histfix.load_json's error, or the dump, and what upstream and the walk make of it."""
    from pydantic_ai import messages as pai

    import histfix

    import schema_strategies

    def dump(messages: list[Any]) -> Any:
        return json.loads(pai.ModelMessagesTypeAdapter.dump_json(messages))

    upstream: Callable[..., Any] | None = getattr(pai, "repair_messages", None)
    results: dict[str, Any] = {}
    with schema_strategies.quiet():
        for name, history in json.loads(source.read_text()).items():
            try:
                loaded = histfix.load_json(json.dumps(history))
            except (TypeError, ValueError) as exc:
                results[name] = {"error": str(exc).splitlines()[0][:300]}
                continue
            result: dict[str, Any] = {"dump": dump(loaded)}
            for last in (True, False):
                walk = histfix.repair(loaded, repair_last_response=last, backend="histfix")
                result[f"walk {last}"] = dump(walk)
                if upstream is not None:
                    theirs = upstream(loaded, repair_last_response=last)
                    result[f"upstream {last}"] = dump(theirs)
                    result[f"equal {last}"] = walk == theirs
            results[name] = result
    out.write_text(json.dumps(results))


# --- the report ---------------------------------------------------------------------------------------


def _run(python: str, *args: str) -> None:
    command = [python, str(Path(__file__).resolve()), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=STEP_TIMEOUT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"release watch: {' '.join(args[:1])} failed in {python}:\n{done.stderr[-3000:]}")


def _walk_against_upstream(probed: Mapping[str, Any]) -> dict[str, list[str]]:
    found = {}
    for name, result in probed.items():
        for last in (True, False):
            if f"upstream {last}" not in result:
                continue
            lines = differences(result[f"walk {last}"], result[f"upstream {last}"])
            if not lines and not result[f"equal {last}"]:
                lines = ["(dumps equal, messages differ under ==)"]
            if lines:
                found[f"{name} (repair_last_response={last})"] = lines
    return found


def _upstream_changed(old: Mapping[str, Any], projected: Mapping[str, Any]) -> dict[str, list[str]]:
    """The pinned release's repair beside the newest's as the pinned release loads it."""
    found = {}
    for key, result in projected.items():
        name, last = key.rsplit(" @", 1)
        before = old.get(name, {}).get(f"upstream {last}")
        if before is None or "dump" not in result:
            continue
        lines = differences(before, result["dump"])
        if lines:
            found[f"{name} (repair_last_response={last})"] = lines
    return found


def _load_failures(probed: Mapping[str, Any]) -> dict[str, list[str]]:
    return {name: [result["error"]] for name, result in probed.items() if "error" in result}


def _without_indexes(line: str) -> str:
    """A whole line with list indexes left out: what groups load errors (their text is the point)."""
    return re.sub(r"\[\d+\]", "[]", line)


def report(pinned_python: str, examples: int, workdir: Path) -> int:
    newest_python = sys.executable
    files = {
        name: workdir / f"{name}.json" for name in ("new-facts", "old-facts", "new-written", "old-written")
    }
    _run(newest_python, "facts", str(files["new-facts"]))
    _run(pinned_python, "facts", str(files["old-facts"]))
    _run(newest_python, "write", str(examples), str(files["new-written"]))
    _run(pinned_python, "write", str(examples), str(files["old-written"]))
    probes = {
        "new-on-new": (newest_python, "new-written"),
        "new-on-old": (pinned_python, "new-written"),
        "old-on-new": (newest_python, "old-written"),
    }
    for name, (python, source) in probes.items():
        _run(python, "probe", str(files[source]), str(workdir / f"{name}.json"))
    read = {name: json.loads((workdir / f"{name}.json").read_text()) for name in probes}
    # The newest release's repairs, as the pinned release loads them (what it can hold of them).
    repaired = {
        f"{name} @{last}": result[f"upstream {last}"]
        for name, result in read["new-on-new"].items()
        for last in (True, False)
        if f"upstream {last}" in result and "dump" in read["new-on-old"].get(name, {})
    }
    (workdir / "new-repaired.json").write_text(json.dumps(repaired))
    _run(pinned_python, "probe", str(workdir / "new-repaired.json"), str(workdir / "projected.json"))
    projected = json.loads((workdir / "projected.json").read_text())
    new, old = (json.loads(files[f"{w}-facts"].read_text()) for w in ("new", "old"))
    sections = [
        schema_changes(
            summarize(old["schema"]), summarize(new["schema"]), old["metadata_keys"], new["metadata_keys"]
        ),
        grouped(_walk_against_upstream(read["new-on-new"])),
        grouped(_upstream_changed(read["new-on-old"], projected)),
        grouped(_load_failures(read["new-on-old"]), by=_without_indexes),
        grouped(_load_failures(read["old-on-new"]), by=_without_indexes),
    ]
    text, status = render(old["version"], new["version"], sections)
    print(text)
    (workdir / "verdict").write_text(f"{status}\n")  # for a caller that lets the exit status pass
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    one = steps.add_parser("report", help="the whole report (run by the newest release's Python)")
    one.add_argument(
        "--pinned-python", required=True, help="the Python of an environment holding the pinned release"
    )
    one.add_argument(
        "--examples", type=int, default=400, help="schema-drawn histories per release (default 400)"
    )
    one.add_argument(
        "--workdir", type=Path, help="where the steps' files go (default: a temporary directory)"
    )
    steps.add_parser("facts").add_argument("out", type=Path)
    drawn = steps.add_parser("write")
    drawn.add_argument("count", type=int)
    drawn.add_argument("out", type=Path)
    probed = steps.add_parser("probe")
    probed.add_argument("source", type=Path)
    probed.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.step == "facts":
        facts(args.out)
    elif args.step == "write":
        write(args.count, args.out)
    elif args.step == "probe":
        probe(args.source, args.out)
    elif args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        return report(args.pinned_python, args.examples, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="release-watch-") as folder:
            return report(args.pinned_python, args.examples, Path(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
