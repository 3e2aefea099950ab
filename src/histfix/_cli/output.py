"""Where ``-o`` and ``--in-place`` write: what sits at the path decides how (the output-file policy).

A regular file is replaced atomically (never half-written, keeping its mode), a link is followed
and stays a link, a character device or FIFO is written through, and anything else, or a file
with other hard links, is refused with one line (:class:`.shared.InputError`). Nothing writes
through a link, device or FIFO as if it were a plain file.
"""

from __future__ import annotations

import os
import stat
import sys

from .shared import InputError

TYPE_CHECKING = False  # typing itself is not imported: every command imports this
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["refuse_in_place", "write_output"]


def _write_through(target: Path, data: bytes) -> None:
    """Write into a character device or FIFO as it is: opened for writing (never created,
    truncated or replaced); a FIFO's open waits for its reader, as a shell's ``>`` does."""
    fd = os.open(target, os.O_WRONLY)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def write_output(target: str, data: bytes) -> None:
    """Write ``data`` where ``-o``/``--in-place`` names: what sits at that path decides how.

    ``-`` is standard output. A character device (``/dev/null``, a terminal) or a FIFO is written
    through, never replaced. A symlink is followed: the file it points to is replaced atomically,
    keeping its mode, and the link stays a link; a link that points nowhere yet creates the file
    it names (as ``>`` in a shell does). A regular file is replaced atomically
    (:func:`write_atomically`), unless it has other hard links: replacing it would split them and
    writing into it could leave every name half-written, so that is refused and nothing is
    touched. Anything else (a directory, a socket, a block device) is refused. Refusals and
    failures are :class:`InputError`, one line.
    """
    if target == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    from pathlib import Path

    from .._atomic_write import write_atomically

    path = Path(os.path.realpath(target))  # every link in the chain followed, as open() would
    try:
        found = path.stat()
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise InputError(f"{target}: cannot write it ({exc.strerror})") from exc
    try:
        if found is None or stat.S_ISREG(found.st_mode):
            if found is not None and found.st_nlink > 1:
                raise InputError(
                    f"{target}: has {found.st_nlink} hard links; replacing it would split them and "
                    "writing into it could leave them half-written: write elsewhere with -o, then copy it over"
                )
            write_atomically(path, data)
        elif stat.S_ISCHR(found.st_mode) or stat.S_ISFIFO(found.st_mode):
            _write_through(path, data)
        else:
            raise InputError(
                f"{target}: is {_kind_of(found.st_mode)}; -o and --in-place write only to a regular "
                "file, a FIFO or a character device"
            )
    except OSError as exc:
        raise InputError(f"{target}: cannot write it ({exc.strerror})") from exc


def _kind_of(mode: int) -> str:
    kinds = {
        stat.S_ISDIR: "a directory",
        stat.S_ISSOCK: "a socket",
        stat.S_ISBLK: "a block device",
        stat.S_ISCHR: "a character device",
        stat.S_ISFIFO: "a FIFO",
    }
    return next((name for test, name in kinds.items() if test(mode)), "not a regular file")


def refuse_in_place(source: str) -> None:
    """Refuse ``--in-place`` on anything but a regular file (a link to one is fine) before it is
    read, since reading a FIFO or a device consumes what it held."""
    try:
        mode = os.stat(source).st_mode
    except OSError:
        return  # reading it says what is wrong
    if not stat.S_ISREG(mode):
        raise InputError(f"{source}: is {_kind_of(mode)}; --in-place needs a regular file (use -o)")
