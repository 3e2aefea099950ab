"""Benchmark: ``histfix scan STORE --against R`` beside ``histfix scan STORE``, whole commands.

Not a test. Run with the newest release installed and the environments cached (or a wheelhouse):
``python benchmarks/bench_upgrade.py --against 1.107.10,2.68.0 --sizes 10000 100000 [--cache DIR]
[--find-links DIR] [--pairs 2] [--jobs 1 2]``.

The store is bench_store.py's JSONL of realistic histories (a tenth broken), written once per
size. Each measurement is a whole command as a user runs it (start-up, reading, every probe,
the summary), in turn with the one it is compared with (scan, then --against, then scan ...),
so that the ratio of each pair is taken on the same machine state: a machine shared with
others drifts, and ratios of neighbouring runs drift much less than times. For every run:
wall seconds, the CPU seconds of the command and every process it waited for (its probes), and
the peak resident memory of the largest of them. ``--jobs`` gives the --jobs values the
upgrade check is run with (the scan runs with --jobs 1): the speed-up of --jobs 2 over --jobs 1
is taken pair by pair too.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import histories  # the same realistic histories as the store benchmark

import histfix


@dataclass(frozen=True)
class Bench:
    """How each command is run: ``histfix scan``, the environment options, pairs per comparison."""

    command: list[str]
    where: list[str]
    pairs: int

    def scan(self, store: Path, *extra: str) -> list[str]:
        return [*self.command, str(store), *extra]

    def against(self, store: Path, release: str, jobs: int) -> list[str]:
        return self.scan(store, "--against", release, "--jobs", str(jobs), *self.where)


def run(argv: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (the command and its probes) and peak MiB of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # ru_maxrss of the children is the largest one so far: a new maximum, or this run's is not above it
    return wall, cpu, after.ru_maxrss / 1024


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="1.107.10", help="releases, comma-separated (each timed alone)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--pairs", type=int, default=2, help="pairs of runs per comparison")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1], help="--jobs of the upgrade check")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--find-links", type=Path, default=None)
    args = parser.parse_args()
    where = [*(["--cache-dir", str(args.cache)] if args.cache else [])]
    where += ["--find-links", str(args.find_links)] if args.find_links else []
    bench = Bench([sys.executable, "-m", "histfix", "scan"], where, args.pairs)
    releases = args.against.split(",")
    print(
        f"pydantic-ai-slim {histfix.backend_info().version} installed; {os.cpu_count()} cores; load {load()}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        empty = Path(scratch, "empty.jsonl")
        empty.write_bytes(b"")
        for release in releases:  # the environment built and its bytecode compiled: every run finds it cached
            run(bench.against(empty, release, 1))
        for size in args.sizes:
            store = Path(scratch, f"store-{size}.jsonl")
            with store.open("wb") as out:
                for history in histories(size):
                    out.write(history + b"\n")
            for release in releases:
                for jobs in args.jobs:
                    measure(bench, size, store, release, jobs)
                if len(args.jobs) > 1:
                    scaling(bench, size, store, release, args.jobs)


def measure(bench: Bench, size: int, store: Path, release: str, jobs: int) -> None:
    scan, against, ratios = [], [], []
    for _ in range(bench.pairs):
        plain = run(bench.scan(store, "--jobs", "1"))
        checked = run(bench.against(store, release, jobs))
        scan.append(plain)
        against.append(checked)
        ratios.append((checked[0] / plain[0], checked[1] / plain[1]))
    wall = statistics.median(r[0] for r in ratios)
    cpu = statistics.median(r[1] for r in ratios)
    s_wall, s_cpu, s_peak = (statistics.median(x[i] for x in scan) for i in range(3))
    a_wall, a_cpu, a_peak = (statistics.median(x[i] for x in against) for i in range(3))
    print(
        f"{size:,} histories: scan --jobs 1 {s_wall:.1f} s wall, {s_cpu:.1f} s CPU "
        f"({s_cpu * 1000 / size:.2f} ms/history), peak {s_peak:.0f} MiB | --against {release} --jobs {jobs} "
        f"{a_wall:.1f} s wall, {a_cpu:.1f} s CPU ({a_cpu * 1000 / size:.2f} ms/history), peak {a_peak:.0f} MiB "
        f"| ratio {wall:.2f}x wall, {cpu:.2f}x CPU (median of {bench.pairs} pairs; load {load()})",
        flush=True,
    )


def scaling(bench: Bench, size: int, store: Path, release: str, jobs: list[int]) -> None:
    low, high = min(jobs), max(jobs)
    speedups = []
    for _ in range(bench.pairs):
        slow = run(bench.against(store, release, low))
        fast = run(bench.against(store, release, high))
        speedups.append(slow[0] / fast[0])
    print(
        f"{size:,} histories --against {release}: --jobs {high} is {statistics.median(speedups):.2f}x "
        f"--jobs {low} in wall time (median of {bench.pairs} pairs; load {load()})",
        flush=True,
    )


if __name__ == "__main__":
    main()
