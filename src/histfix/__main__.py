"""``python -m histfix FILE``: repair a stored pydantic-ai history and show it before and after.

Reads pydantic-ai JSON (``ModelMessagesTypeAdapter.dump_json`` output); ``-`` reads stdin.
``--json`` prints the repaired history as JSON instead of the side-by-side view. Bad input gets
one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from . import __version__

_WIDTH = 60


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


def _describe_part(part: Any) -> str:
    kind = getattr(part, "part_kind", type(part).__name__)
    if hasattr(part, "tool_call_id") and hasattr(part, "tool_name"):
        label = f"{part.tool_name}({part.tool_call_id})"
        body = getattr(part, "args", None) if hasattr(part, "args") else getattr(part, "content", "")
        synthesized = (getattr(part, "metadata", None) or {}).get("pydantic_ai_synthesized_tool_return")
        return f"{kind:<14} {label} {_short(body)}" + ("  [synthesized]" if synthesized else "")
    return f"{kind:<14} {_short(getattr(part, 'content', ''))}"


def _render(title: str, messages: list[Any]) -> list[str]:
    lines = [f"{title} ({len(messages)} messages):"]
    for index, message in enumerate(messages):
        kind = getattr(message, "kind", "?")
        parts = list(message.parts) or [None]
        for n, part in enumerate(parts):
            head = f"  {index:>3} {kind:<9}" if n == 0 else " " * 15
            lines.append(f"{head} {'(no parts)' if part is None else _describe_part(part)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m histfix",
        description="Repair a stored pydantic-ai message history and show it before and after.",
        epilog="example: python -m histfix tests/data/aborted_run.json",
    )
    parser.add_argument("file", help="pydantic-ai JSON history, or - for stdin")
    parser.add_argument(
        "--keep-last-response", action="store_true", help="leave the last response's calls open"
    )
    parser.add_argument("--json", action="store_true", help="print the repaired history as JSON")
    parser.add_argument("--version", action="version", version=f"histfix {__version__}")
    args = parser.parse_args(argv)

    try:
        raw = sys.stdin.buffer.read() if args.file == "-" else open(args.file, "rb").read()  # noqa: SIM115
    except OSError as exc:
        print(f"histfix: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    from pydantic import ValidationError
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    import histfix

    try:
        before = ModelMessagesTypeAdapter.validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "top level"
        print(f"histfix: {args.file} is not a pydantic-ai history ({where}: {first['msg']})", file=sys.stderr)
        return 2
    after = histfix.repair(before, repair_last_response=not args.keep_last_response)
    if args.json:
        sys.stdout.write(ModelMessagesTypeAdapter.dump_json(after, indent=2).decode() + "\n")
        return 0
    info = histfix.backend_info()
    print(
        f"histfix {__version__} on {info.distribution} {info.version}: {info.backend} repair ({info.reason})"
    )
    print()
    print("\n".join(_render("before", before)))
    print()
    print("\n".join(_render("after", after)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
