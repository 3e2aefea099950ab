"""A probe process seen from the check: started once, handed requests one at a time, stopped at the end.

Each :class:`Probe` runs ``python -m histfix.upgrade._probe`` (one release's environment, this
histfix on its path) and exchanges frames with it (:mod:`._frames`) on a thread of its own, so
the releases (and the probes of one release) work side by side while the check waits for the
answers it needs, each within a timeout. A probe that stops, hangs or answers nonsense is stopped
and its release reported in one line (:class:`~histfix._compare.environments.CompareError`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import IO, Any

from packaging.version import Version

from .._compare.environments import CompareError
from ._frames import FrameError, read_frame, write_frame

__all__ = ["PROBE_TIMEOUT", "START_TIMEOUT", "Probe", "probe_command"]

#: Seconds a probe may take over one request (a batch) before its release is given up.
PROBE_TIMEOUT = 300.0
#: Seconds a probe may take to start (import pydantic-ai and histfix) and say which release it runs.
START_TIMEOUT = 120.0

Header = dict[str, Any]
Blobs = list[bytes | None]


def probe_command(
    python: Path | str, path_entry: Path, *, inherit_path: bool
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of a probe run by ``python`` with ``path_entry`` (a folder holding
    this histfix) first on its path. Another release's environment gets nothing of this one's
    Python variables; the installed release's (``inherit_path``) keeps its own path behind."""
    variables = dict(os.environ)
    if inherit_path:
        rest = variables.get("PYTHONPATH")
        variables["PYTHONPATH"] = os.pathsep.join([str(path_entry), *([rest] if rest else [])])
    else:
        variables = {k: v for k, v in variables.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        variables |= {"PYTHONPATH": str(path_entry), "PYTHONNOUSERSITE": "1"}
    variables["PYTHONIOENCODING"] = "utf-8"
    return [str(python), "-m", "histfix.upgrade._probe"], variables


class Probe:
    """One probe process. ``release``: what it must say it runs (None: whatever it runs)."""

    def __init__(
        self, argv: list[str], variables: dict[str, str], release: str | None, timeout: float = PROBE_TIMEOUT
    ) -> None:
        self.timeout = timeout
        # stderr to a file, not a pipe: a chatty release must never block on a pipe nobody reads
        self._errors: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop)
        try:
            self._process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errors, env=variables
            )
        except OSError as exc:
            self._errors.close()
            raise CompareError(f"cannot start {argv[0]} ({exc.strerror})") from None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="histfix-probe")
        # Batches in flight time out together and each stops the probe: one stops it, the others
        # wait for that and find it stopped (closing a pipe another thread is closing raises).
        self._stopping = threading.Lock()
        self._stopped = False
        self._expected = release
        self._hello: Future[tuple[Header, Blobs]] = self._pool.submit(self._read_frame)

    def hello(self) -> Header:
        """Its first frame (which release it runs, its field table), once it has started."""
        hello, _ = self._wait(self._hello, START_TIMEOUT, "to start")
        runs = hello.get("release", "?")
        if self._expected is not None and Version(str(runs)) != Version(self._expected):
            self.stop()
            raise CompareError(f"its environment runs pydantic-ai-slim {runs}")
        return hello

    def _read_frame(self) -> tuple[Header, Blobs]:
        assert self._process.stdout is not None
        frame = read_frame(self._process.stdout)
        if frame is None:
            self._process.wait()
            raise CompareError(self._why_it_ended())
        return frame

    def _why_it_ended(self) -> str:
        self._errors.seek(0)
        lines = [line.strip() for line in self._errors.read().decode(errors="replace").splitlines()]
        last = next((line for line in reversed(lines) if line), "no output")
        return f"the probe stopped (exit status {self._process.returncode}): {last}"

    def _wait(self, future: Future[tuple[Header, Blobs]], timeout: float, what: str) -> tuple[Header, Blobs]:
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            self.stop()
            raise CompareError(f"the probe gave no answer {what} in {timeout:.0f} s") from None
        except CompareError:
            self.stop()
            raise
        except (OSError, ValueError, FrameError) as exc:  # a broken pipe, or bytes that are no frame
            self.stop()
            raise CompareError(f"the probe failed: {exc}") from None

    def send(self, header: Header, blobs: Blobs) -> Future[tuple[Header, Blobs]]:
        """Hand one request to the probe; :meth:`answer` waits for what it says."""

        def exchange() -> tuple[Header, Blobs]:
            assert self._process.stdin is not None
            try:
                write_frame(self._process.stdin, header, blobs)
            except BrokenPipeError:
                self._process.wait()
                raise CompareError(self._why_it_ended()) from None
            return self._read_frame()

        try:
            return self._pool.submit(exchange)
        except RuntimeError:  # stopped already, by another request's failure or timeout
            failed: Future[tuple[Header, Blobs]] = Future()
            failed.set_exception(CompareError("the probe was stopped after an earlier failure"))
            return failed

    def answer(self, sent: Future[tuple[Header, Blobs]], what: str) -> tuple[Header, Blobs]:
        """The answer to a request :meth:`send` handed over (``what``: where in the store, for
        the message when there is none in time)."""
        return self._wait(sent, self.timeout, what)

    def request(self, header: Header, blobs: Blobs, what: str) -> tuple[Header, Blobs]:
        """:meth:`send`, then :meth:`answer`."""
        return self.answer(self.send(header, blobs), what)

    def stop(self) -> None:
        """Stop the process (at once: whatever it was doing is of no use any more); once, from any thread."""
        with self._stopping:
            if self._stopped:
                return
            self._stopped = True
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
            self._pool.shutdown(wait=True, cancel_futures=True)
            for pipe in (self._process.stdin, self._process.stdout, self._errors):
                if pipe is not None:
                    # a broken pipe's buffered bytes cannot be flushed: the process is gone anyway
                    with contextlib.suppress(OSError):
                        pipe.close()
