"""``python -m histfix.upgrade._probe``: one release's side of the upgrade check, in its environment.

Started once per release (and per ``--jobs``) in the environment ``histfix compare`` builds for
that release, with this histfix on its path. It says hello (one frame: the release, its backend
and its field table), then answers each request frame on stdin with one frame on stdout
(:mod:`._side`), until stdin closes. Only the standard library, pydantic-ai and histfix.
"""

from __future__ import annotations

import gc
import sys

__all__ = ["main"]


def main() -> int:
    from ._frames import read_frame, write_frame

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    try:
        from ._side import ReleaseSide

        side = ReleaseSide()
        hello = side.hello()
    except Exception as exc:  # a release histfix cannot run on: the caller reports this one line
        print(f"cannot import pydantic-ai and histfix: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3
    # what a library prints would break the frames: the answers get stdout to themselves
    sys.stdout = sys.stderr
    write_frame(stdout, hello)
    _settle()
    while (request := read_frame(stdin)) is not None:
        header, blobs = side.answer(*request)
        write_frame(stdout, header, blobs)
        _settle()
    return 0


def _settle() -> None:
    """Between requests: collect the garbage, then keep what is still alive (the release's modules
    and schemas, the reused Agent, the proofs' plans) out of the collector's later passes, which
    otherwise walk all of it again for every batch's short-lived objects."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


if __name__ == "__main__":
    sys.exit(main())
