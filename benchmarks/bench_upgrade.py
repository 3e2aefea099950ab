"""Benchmark: ``histfix scan --against`` (the upgrade check) beside the plain scan, per history.

Not a test. Run with a release installed and the environments cached (or a wheelhouse):
``python benchmarks/bench_upgrade.py --against 2.9.1 [--sizes 1000 4000] [--cache DIR] [--find-links DIR]``.

The store is bench_store.py's JSONL of realistic histories (a tenth broken). Timed in CPU
seconds, this process's and the probes' (the machine may be shared; wall time is printed beside
it): the plain scan with one worker, then the upgrade check against each release alone, whose
per-history cost is A's observation here (both loaders, the default repair, a plain Agent run
judged as ``histfix compare`` judges it) plus the same in the release's probe, plus the round
trip. The probe's start (an interpreter importing pydantic-ai) is paid once per release and is
timed on its own with an empty store. Peak RSS of this process and of the largest probe.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import build  # the same realistic histories as the store benchmark

import histfix
from histfix.store import check_upgrade, open_source
from histfix.store._record import Options
from histfix.store._runner import repair_source


def cpu() -> tuple[float, float]:
    """CPU seconds of this process and of its finished children (the probes, once stopped)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def measure(run: object) -> tuple[float, float, float]:
    """Wall seconds, this process's CPU and the children's CPU of ``run()``."""
    wall, (own, children) = time.perf_counter(), cpu()
    run()  # type: ignore[operator]
    after_own, after_children = cpu()
    return time.perf_counter() - wall, after_own - own, after_children - children


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="2.9.1", help="releases, comma-separated (each timed alone)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--find-links", type=Path, default=None)
    args = parser.parse_args()
    where = {"cache": args.cache, "find_links": args.find_links}
    print(f"pydantic-ai-slim {histfix.backend_info().version} installed (A)")
    with tempfile.TemporaryDirectory() as scratch:
        empty = Path(scratch, "empty.jsonl")
        empty.write_bytes(b"")
        for release in args.against.split(","):
            with open_source(str(empty)) as source:
                wall, own, children = measure(partial(check_upgrade, source, [release], **where))
            print(
                f"probe start, {release}: {wall:.2f} s wall, {own:.2f} s CPU here + {children:.2f} s in the probe"
            )
        for size in args.sizes:
            path = Path(scratch, f"store-{size}.jsonl")
            path.write_bytes(b"\n".join(build(size)) + b"\n")
            with open_source(str(path)) as source:
                wall, own, _ = measure(lambda: repair_source(source, Options(), backup=None, jobs=1))
            print(
                f"{size:,} histories, plain scan --jobs 1: {own:.2f} s CPU ({size / own:,.0f}/s), {wall:.2f} s wall"
            )
            for release in args.against.split(","):
                with open_source(str(path)) as source:
                    wall, own, children = measure(partial(check_upgrade, source, [release], **where))
                total = own + children
                print(
                    f"{size:,} histories --against {release}: {own:.2f} s CPU here + {children:.2f} s in the "
                    f"probe = {total:.2f} s ({size / total:,.0f}/s of CPU), {wall:.2f} s wall "
                    f"({size / wall:,.0f}/s)"
                )
    peak_here = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peak_probe = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS: {peak_here:.0f} MB here, {peak_probe:.0f} MB in the largest probe")


if __name__ == "__main__":
    main()
