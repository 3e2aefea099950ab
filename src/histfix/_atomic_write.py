"""Replacing a regular file atomically: the one writer the CLI and the file stores share."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["write_atomically"]


def _current_umask() -> int:
    mask = os.umask(0o077)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


def write_atomically(target: Path, data: bytes) -> None:
    """Replace the regular file ``target`` (or create it) through a temporary file and a rename.

    The temporary file sits in ``target``'s own folder, so the rename is atomic: a crash, a signal
    or a full disk leaves the old file (or none) in place, never a truncated one. A replaced file
    keeps its mode (and, where the process may, its owner); a new one gets the mode the umask
    gives, as with any Unix tool (the temporary file itself starts private, 0600).
    """
    folder = target.parent if str(target.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            old: os.stat_result | None = target.stat()
        except FileNotFoundError:
            old = None
        os.chmod(temporary, 0o666 & ~_current_umask() if old is None else stat.S_IMODE(old.st_mode))
        if old is not None and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):  # only root may give a file away: keep what we can
                os.chown(temporary, old.st_uid, old.st_gid)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
