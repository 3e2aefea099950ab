"""Benchmark: how long ``histfix --help``, ``--version`` and ``info`` take beside argparse alone.

Not a test: run with histfix importable, e.g. ``PYTHONPATH=src python benchmarks/bench_startup.py``
(``--pairs 40``). The yardstick is a stand-alone script that builds the same argparse parser (the
same subcommands, options and help texts, recorded from ``build_parser``) and nothing else; histfix
runs as its console script does (``from histfix._cli.commands import main``). Each figure is a
whole process, started A B A B ... so that the machine's drift hits both; the medians and the
median of the pairwise ratios are printed. Bytecode caches are written and used, as an installed
histfix has them (``PYTHONDONTWRITEBYTECODE`` is dropped for the runs; the first pair, which writes
them, is not counted). ``--write-yardstick FILE`` only writes the script.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: What pip's console script for ``histfix = "histfix._cli.commands:main"`` runs.
CONSOLE_SCRIPT = """import re, sys
from histfix._cli.commands import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""
COMMANDS = (["--help"], ["--version"], ["info"])


class _Recorder:
    """Replays the parser's construction as source: every argparse call ``build_parser`` makes."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.depth = 0  # argparse's calls inside a recorded call are replayed by that call

    def name(self, obj: object) -> str:
        return self.names.setdefault(id(obj), f"p{len(self.names)}")

    def value(self, value: Any) -> str:
        if id(value) in self.names:  # set_defaults(parser=sub): a parser built above
            return self.names[id(value)]
        if isinstance(value, type):
            return "Parser" if issubclass(value, argparse.ArgumentParser) else f"argparse.{value.__name__}"
        if callable(value):  # a type= converter or a set_defaults(run=...) handler
            return "int" if getattr(value, "__name__", "") == "positive" else "None"
        return repr(value)

    def call(self, target: str, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        # A command's forms (repair FILE or STORE...) are parsers built when it runs, not for --help.
        kwargs = {key: value for key, value in kwargs.items() if key != "forms"}
        spelled = [self.value(a) for a in args] + [f"{k}={self.value(v)}" for k, v in kwargs.items()]
        return f"{target}.{method}({', '.join(spelled)})"


def yardstick_source() -> str:
    """The stand-alone script: argparse and the recorded calls, nothing from histfix."""
    from histfix._cli import commands, exits

    recorder = _Recorder()
    originals: dict[tuple[type, str], Any] = {}

    def wrap(cls: type, method: str) -> None:
        original = getattr(cls, method)
        originals[cls, method] = original

        def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
            recorder.depth += 1
            try:
                result = original(self, *args, **kwargs)
            finally:
                recorder.depth -= 1
            if recorder.depth:
                return result
            line = recorder.call(recorder.name(self), method, args, kwargs)
            if result is not None:
                line = f"{recorder.name(result)} = {line}"
            recorder.lines.append(line)
            return result

        setattr(cls, method, recorded)

    constructor = argparse.ArgumentParser.__init__

    def constructed(self: Any, *args: Any, **kwargs: Any) -> None:
        if not recorder.names:  # the first parser built is build_parser's own, written out below
            recorder.names[id(self)] = "parser"
        recorder.depth += 1
        try:
            constructor(self, *args, **kwargs)
        finally:
            recorder.depth -= 1

    originals[argparse.ArgumentParser, "__init__"] = constructor
    argparse.ArgumentParser.__init__ = constructed  # type: ignore[method-assign]
    for cls, method in (
        (argparse.ArgumentParser, "add_subparsers"),
        (argparse._ActionsContainer, "add_argument"),
        (argparse._ActionsContainer, "add_mutually_exclusive_group"),
        (argparse._ActionsContainer, "add_argument_group"),
        (argparse._ActionsContainer, "set_defaults"),
        (argparse._SubParsersAction, "add_parser"),
    ):
        wrap(cls, method)
    try:
        parser = commands.build_parser()
    finally:
        for (cls, method), original in originals.items():
            setattr(cls, method, original)
    top = recorder.names[id(parser)]
    keywords = {"prog": parser.prog, "description": parser.description, "epilog": parser.epilog}
    head = [
        "import argparse, sys",
        "",
        "class Parser(argparse.ArgumentParser):",
        "    def error(self, message):",
        f"        self.exit({exits.EXIT_BAD_INPUT}, f'{{self.prog}}: {{message}} (see {{self.prog}} --help)\\n')",
        "",
        f"{top} = Parser({', '.join(f'{k}={v!r}' for k, v in keywords.items())}, "
        "formatter_class=argparse.RawDescriptionHelpFormatter)",
    ]
    tail = [f"args = {top}.parse_args()", f"if args.command is None:\n    {top}.print_help()"]
    return "\n".join([*head, *recorder.lines, *tail]) + "\n"


def _timed(argv: list[str]) -> float:
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40, help="paired runs per command (40)")
    parser.add_argument("--write-yardstick", type=Path, metavar="FILE", help="only write the yardstick")
    args = parser.parse_args()
    if args.write_yardstick:
        args.write_yardstick.write_text(yardstick_source())
        return
    with tempfile.TemporaryDirectory() as folder:
        yardstick, histfix = Path(folder, "yardstick.py"), Path(folder, "histfix")
        yardstick.write_text(yardstick_source())
        histfix.write_text(CONSOLE_SCRIPT)
        for command in COMMANDS:
            pairs = []
            for _ in range(args.pairs + 1):  # the first pair warms the caches and is not counted
                pairs.append(
                    (
                        _timed([sys.executable, str(histfix), *command]),
                        _timed([sys.executable, str(yardstick), *command]),
                    )
                )
            pairs = pairs[1:]
            a, b = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
            ratio = statistics.median(p[0] / p[1] for p in pairs)
            print(
                f"histfix {' '.join(command):<10} {a * 1000:6.1f} ms  argparse alone {b * 1000:6.1f} ms  ratio {ratio:.2f}x"
            )


if __name__ == "__main__":
    main()
