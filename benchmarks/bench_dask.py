"""Benchmark: the store scan on a Dask LocalCluster beside the local scan, up to a million histories.

Not a test. Needs ``histfix[dask]`` and a release installed:
``python benchmarks/bench_dask.py --sizes 10000 100000 1000000 [--shape short|realistic]``.

For each size it writes a JSONL store (bench_store.py's histories: valid conversations, a tenth
broken the ways the corpus shows; ``realistic`` runs 3 to 300 messages, about 17 kB a history;
``short`` 3 to 12, so a million fit on one disk) and times three whole commands on it, as a user
runs them: ``histfix scan FILE --jobs 1``, ``--jobs 2``, and ``--dask local --jobs 2`` (a
LocalCluster of two worker processes on 127.0.0.1, started and stopped by the command: its start
is part of the engine's cost). Each is wall time on an idle machine (run nothing beside it), with
the peak resident memory of the command's whole process tree (sampled every 0.2 s), and the
three commands must print the same summary.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_store import histories

import histfix

#: Messages in the longest history of each shape.
SHAPES = {"realistic": 300, "short": 12}


def write_store(path: Path, count: int, longest: int) -> int:
    """``count`` histories into a JSONL file at ``path``; its size in bytes."""
    with path.open("wb") as out:
        for raw in histories(count, longest=longest):
            out.write(raw + b"\n")
    return path.stat().st_size


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every process below it."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
    tree, grew = {root}, True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= found
        grew = bool(found)
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm") as statm:
                total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            continue
    return total


def run(command: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak tree RSS in bytes, and the summary a command printed."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True)
        peak = 0
        while process.poll() is None:
            peak = max(peak, _tree_rss(process.pid))
            time.sleep(0.2)
        wall = time.perf_counter() - started
        out.seek(0)
        printed = out.read()
    if process.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{printed}")
    # the summary without its first line, which gives this run's time
    summary = "\n".join(printed.splitlines()[1:])
    return wall, peak, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="short")
    parser.add_argument("--dir", type=Path, default=None, help="where the stores are written (a temp dir)")
    parser.add_argument(
        "--single-upto",
        type=int,
        default=None,
        metavar="N",
        help="time --jobs 1 only up to N histories (its rate does not depend on the store's size)",
    )
    args = parser.parse_args()
    info = histfix.backend_info()
    print(f"{info.distribution} {info.version}, Python {platform.python_version()}, {os.cpu_count()} CPUs")
    print(f"shape {args.shape}: 3 to {SHAPES[args.shape]} messages a history, a tenth broken\n")
    print(
        "| histories | store | --jobs 1 | --jobs 2 | --dask local (2 workers) | Dask's cost over --jobs 2 |"
    )
    print("|---|---|---|---|---|---|")
    scan = [sys.executable, "-m", "histfix", "scan"]
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        for count in args.sizes:
            store = Path(folder) / f"store-{count}.jsonl"
            size = write_store(store, count, SHAPES[args.shape])
            cells, summaries, walls = [], [], []
            single = args.single_upto is None or count <= args.single_upto
            for extra in (["--jobs", "1"], ["--jobs", "2"], ["--dask", "local", "--jobs", "2"]):
                if extra[1] == "1" and not single:
                    cells.append("not timed (--single-upto)")
                    continue
                wall, peak, summary = run([*scan, str(store), *extra])
                walls.append(wall)
                summaries.append(summary)
                cells.append(f"{count / wall:,.0f}/s, {wall:.1f} s, peak {peak / 2**20:,.0f} MB")
            if len(set(summaries)) != 1:
                raise SystemExit(
                    f"{count}: the scans printed different summaries:\n" + "\n---\n".join(summaries)
                )
            overhead = walls[-1] / walls[-2]
            print(
                f"| {count:,} | {size / 2**20:,.0f} MB | {' | '.join(cells)} | {overhead:.2f}x |", flush=True
            )
            store.unlink()


if __name__ == "__main__":
    main()
