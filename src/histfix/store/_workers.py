"""The worker processes of a store run: fresh interpreters that share nothing with the run but two pipes.

A worker is ``python -c`` started anew, never forked: it inherits no database connection, open
file, lock or signal handler from the run, so nothing the run holds outlives the run through a
worker; the same code runs on every platform; and an application calling the store API need not
guard its ``__main__`` as ``multiprocessing`` would make it. Each worker runs in a session of its
own, so a terminal's Ctrl-C or a signal to the run's process group reaches the run alone, which
then ends its workers quietly.

A worker lives exactly as long as its pipes: it exits the moment its stdin closes (the run ended,
or died and the kernel closed its end), even mid-batch, and writing records to a run that is gone
fails at once instead of blocking. On Linux the kernel also kills it when the run dies
(``PR_SET_PDEATHSIG``), even while it holds the interpreter in a long computation.

The run sends each worker its :class:`Options` and the function it runs on each batch
(``examine_items``, unless the run gives another: a migration prepares histories to save), then
batches of items (length-prefixed pickles on the worker's stdin); the worker answers each batch,
in order, with its records on its stdout.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn

from ._record import Options, Record, examine

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Item", "WorkerLost", "Workers", "can_start_workers", "examine_items", "serve"]

#: One stored history as a worker gets it: key, raw bytes, the store's own reason it is none.
Item = tuple[str, bytes, str | None]

#: How long ending the workers waits for them to exit on their own before it kills them.
EXIT_GRACE = 1.0
_HEADER = struct.Struct(">Q")
#: ``prctl(PR_SET_PDEATHSIG, sig)``: the signal Linux sends a process when its parent dies.
_PR_SET_PDEATHSIG = 1
# What a worker runs: the run's import path first (histfix may live anywhere the run found it),
# and no KeyboardInterrupt traceback should a SIGINT reach it while it still imports.
_BOOT = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "sys.path[:] = __import__('json').loads(sys.argv[1]); "
    "from histfix.store._workers import serve; serve(int(sys.argv[2]), sys.argv[3] == '1')"
)


class WorkerLost(RuntimeError):
    """A worker process ended before it returned a batch: killed (by hand, by the OOM killer) or
    crashed. Its message is one line; the run stops there, everything before it committed."""


def examine_items(items: list[Item], options: Options) -> list[Record]:
    """The records of one batch: a worker's job, and the run's own when it has no workers."""
    return [examine(key, raw, options, error=error) for key, raw, error in items]


def can_start_workers() -> bool:
    """Whether this interpreter can start another of itself (a frozen application cannot)."""
    return bool(sys.executable) and not getattr(sys, "frozen", False)


# --- both ends: frames on a pipe -----------------------------------------------------------------


def _write_frame(pipe: BinaryIO, value: object) -> None:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(payload)) + payload)
    while view:  # an unbuffered pipe may take part of it
        view = view[pipe.write(view) or 0 :]


def _read_exactly(pipe: BinaryIO, size: int) -> bytes | None:
    """``size`` bytes, or None when the other end closed first."""
    chunks = []
    while size:
        chunk = pipe.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_frame(pipe: BinaryIO) -> Any:
    """The next value, or raises EOFError when the other end closed."""
    header = _read_exactly(pipe, _HEADER.size)
    if header is None:
        raise EOFError
    payload = _read_exactly(pipe, _HEADER.unpack(header)[0])
    if payload is None:
        raise EOFError
    return pickle.loads(payload)


# --- the run's end -------------------------------------------------------------------------------


class _RemoteTraceback(Exception):
    """Where in a worker an unexpected error happened (the cause of the error the run re-raises)."""

    def __str__(self) -> str:
        return str(self.args[0])


def _ended(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


class Workers:
    """``jobs`` worker processes examining batches with ``options``: :meth:`send` a batch to one,
    :meth:`receive` its records, in the order it was sent to that worker. A context manager; on
    leaving it every worker has exited."""

    def __init__(
        self, jobs: int, options: Options, work: Callable[[list[Any], Options], list[Any]] = examine_items
    ) -> None:
        self._processes: list[subprocess.Popen[bytes]] = []
        # The kernel's parent-death signal follows the thread that started the process: only the
        # main thread is sure to live as long as the run.
        deathsig = "1" if threading.current_thread() is threading.main_thread() else "0"
        argv = [
            sys.executable,
            *subprocess._args_from_interpreter_flags(),  # type: ignore[attr-defined]  # -W, -X, -I... as the run's
            "-c",
            _BOOT,
            json.dumps(sys.path),
            str(os.getpid()),
            deathsig,
        ]
        # Windows has no sessions: a process group of its own keeps the console's Ctrl-C away.
        windows: dict[str, Any] = {}
        if os.name == "nt":
            windows["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        try:
            for _ in range(jobs):
                self._processes.append(
                    subprocess.Popen(
                        argv,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        bufsize=0,
                        close_fds=True,
                        start_new_session=True,
                        **windows,
                    )
                )
            for worker in range(jobs):
                self.send(worker, (options, work))
        except OSError as exc:
            self.close()
            raise WorkerLost(f"cannot start a worker process ({exc.strerror or exc})") from exc
        except BaseException:
            self.close()
            raise

    def send(self, worker: int, value: list[Any] | tuple[Options, Callable[..., Any]]) -> None:
        """Hand ``value`` to ``worker``. A worker that is gone is noticed by :meth:`receive`, after
        the records it returned before it went."""
        stdin = self._processes[worker].stdin
        assert stdin is not None
        # Not a BrokenPipeError out of here: the command line reads that as its own stdout closed.
        with contextlib.suppress(OSError, ValueError):
            _write_frame(stdin, value)  # type: ignore[arg-type]

    def receive(self, worker: int) -> list[Record]:
        """The records of the oldest batch sent to ``worker``; WorkerLost if it ended first."""
        process = self._processes[worker]
        assert process.stdout is not None
        try:
            reply = _read_frame(process.stdout)  # type: ignore[arg-type]
        except (EOFError, OSError):
            raise self._lost(process) from None
        if reply[0] == "error":
            _, error, where = reply
            raise error from _RemoteTraceback(where)
        records: list[Record] = reply[1]
        return records

    def _lost(self, process: subprocess.Popen[bytes]) -> WorkerLost:
        try:
            code = process.wait(timeout=EXIT_GRACE)  # its output closed: it is on its way out
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
        return WorkerLost(f"worker process {process.pid} {_ended(code)}")

    def close(self) -> None:
        """End every worker: their stdin closes, so each exits at once (killed if it has not
        within EXIT_GRACE seconds), and is waited for, so none is left behind."""
        for process in self._processes:
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
        deadline = time.monotonic() + EXIT_GRACE
        for process in self._processes:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- the worker's end ----------------------------------------------------------------------------


def _die_with_parent() -> None:
    """Ask Linux to kill this process the moment its parent dies; elsewhere nothing to ask."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no libc to ask: the closed pipe still ends the worker
        pass


def _read_batches(tasks: BinaryIO, batches: list[list[Item]], ready: threading.Condition) -> None:
    """Read batches as they come, so that the end of stdin ends the worker even mid-batch."""
    while True:
        try:
            batch = _read_frame(tasks)
        except (EOFError, OSError):
            os._exit(0)  # the run ended or died: nothing of ours is worth finishing
        with ready:
            batches.append(batch)
            ready.notify()


def serve(parent: int, die_with_parent: bool) -> NoReturn:
    """A worker's whole life (run by ``_BOOT`` in a fresh interpreter): options, then batches in,
    records out, until its stdin closes."""
    if die_with_parent:
        _die_with_parent()
    if os.getppid() != parent:  # the run died before the request above took effect
        os._exit(0)
    tasks = os.fdopen(0, "rb", buffering=0, closefd=False)
    results = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # whatever a library prints goes to stderr, never into the records
    try:
        options, work = _read_frame(tasks)
    except (EOFError, OSError):
        os._exit(0)
    batches: list[list[Item]] = []
    ready = threading.Condition()
    threading.Thread(target=_read_batches, args=(tasks, batches, ready), daemon=True).start()
    import histfix

    histfix.backend_info()  # imports pydantic-ai now, while the run reads its first batches
    while True:
        with ready:
            ready.wait_for(lambda: bool(batches))
            items = batches.pop(0)
        reply: tuple[Any, ...]
        try:
            reply = ("records", work(items, options))
        except Exception as exc:  # a bug, not bad data (examine never raises for that): the run re-raises it
            import traceback

            reply = ("error", exc, traceback.format_exc())
            try:
                pickle.dumps(exc)
            except Exception:
                reply = ("error", RuntimeError(f"{type(exc).__name__}: {exc}"), reply[2])
        try:
            _write_frame(results, reply)
        except OSError:  # the run is gone
            os._exit(0)
