"""Claiming a store for one run, so two histfix runs never work on the same store at once.

:func:`another_run` is the one wording of the refusal, for every kind of store. :class:`FileClaim`
claims a file store (an SQLite file, a directory, a JSONL file) with ``flock`` on the store
itself, so nothing is ever created beside the user's data: exclusive for a writing run, shared for
a reading one, never waited for. The lock belongs to an open file description the run alone
holds (close-on-exec, and workers are fresh interpreters, never forked), so it dies with the run,
however the run dies. ``flock`` is independent of the POSIX locks SQLite takes on Linux and the
BSDs. Where there is no ``fcntl`` (Windows), or the file system has no ``flock``, a file store is
not claimed: two runs are not told apart.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from .._source import StoreError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileClaim", "another_run"]

#: Opens of the store a claim tries while the name keeps pointing at a new file (a JSONL store
#: replaced by its writer between the open and the lock).
_ATTEMPTS = 5


#: What flock says on a file system that has none (some network and FUSE file systems).
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


def another_run(url: str, *, doing: str, what: str = "this store", who: str | None = None) -> StoreError:
    """The one line refusing a run because another histfix run is ``doing`` (writing, reading,
    working on) ``what``; ``who`` names that run where the store can tell."""
    held = f" ({who})" if who else ""
    return StoreError(
        f"{url}: another histfix run is {doing} {what}{held}; let it finish, or stop it, then run this again"
    )


def _open(path: Path, *, directory: bool, follow: bool) -> int:
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if directory:
        flags |= getattr(os, "O_DIRECTORY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    return os.open(path, flags)


def _try_lock(fd: int, *, writing: bool) -> bool:
    """Whether ``fd`` now holds the lock; False when another open file holds a conflicting one."""
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if writing else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        if exc.errno in _NO_FLOCK:  # a file system without flock: not claimed, as where there is no fcntl
            return True
        raise
    return True


def _holder(fd: int) -> str | None:
    """The process holding a flock on ``fd``'s file, from Linux's /proc/locks (None elsewhere)."""
    found = os.fstat(fd)
    # /proc/locks names a file as MAJOR:MINOR:INODE, the device numbers in hex
    file = f"{os.major(found.st_dev):02x}:{os.minor(found.st_dev):02x}:{found.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        return None
    holders = []
    for line in lines:
        fields = line.split()
        # "1: FLOCK ADVISORY WRITE 4242 08:01:1234 0 EOF"; a waiter's line has "->" after the number
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == file:
            holders.append((fields[3] != "WRITE", fields[4]))
    return f"process {min(holders)[1]}" if holders else None


class FileClaim:
    """The claim of the file store at ``path``: :meth:`take` it once, :meth:`move_to` the file that
    replaced it, :meth:`release` it when the source closes.

    ``follow`` claims the file a symlink names (SQLite opens that one); else a symlink is refused.
    ``open_now`` opens the file at once and keeps it open until :meth:`release`, for a file that
    SQLite has open too: closing any descriptor of a file drops every POSIX lock the process holds
    on it, SQLite's included, so the claim's descriptor is opened before SQLite's and closed after.
    """

    def __init__(
        self, url: str, path: Path, *, directory: bool = False, follow: bool = False, open_now: bool = False
    ) -> None:
        self.url, self.path, self._directory, self._follow = url, path, directory, follow
        self._fd: int | None = None
        self._kept = open_now and fcntl is not None
        self._held = False
        self._writing = False
        if self._kept:
            self._fd = self._open(path)

    def _open(self, path: Path) -> int:
        try:
            return _open(path, directory=self._directory, follow=self._follow)
        except OSError as exc:
            raise StoreError(f"{self.url}: cannot open it ({exc.strerror or exc})") from exc

    def take(self, *, writing: bool) -> None:
        """Claim the store for this run (a writing run alone, reading runs together), or a
        StoreError in one line naming the other histfix run. Once claimed, again does nothing."""
        if self._held or fcntl is None:
            return
        if self._fd is not None:
            self._lock(self._fd, writing=writing)
            self._held, self._writing = True, writing
            return
        for _ in range(_ATTEMPTS):
            fd = self._open(self.path)
            try:
                self._lock(fd, writing=writing)
            except BaseException:
                os.close(fd)
                raise
            # Locked, but the name may have moved on to a new file meanwhile (a JSONL store replaced
            # by the run holding it): the claim must be on the store's file as it is now.
            with contextlib.suppress(OSError):
                if os.path.samestat(os.fstat(fd), os.stat(self.path, follow_symlinks=self._follow)):
                    self._fd, self._held, self._writing = fd, True, writing
                    return
            os.close(fd)
        raise StoreError(f"{self.url}: replaced again and again while histfix claimed it; run this again")

    def _lock(self, fd: int, *, writing: bool) -> None:
        try:
            if _try_lock(fd, writing=writing):
                return
        except OSError as exc:
            raise StoreError(f"{self.url}: cannot lock it for this run ({exc.strerror or exc})") from exc
        who = _holder(fd)  # before the shared lock below, which /proc/locks would list too
        # A writer holds it if even a shared lock is refused; else readers do (a writing run needs none).
        doing = "writing" if not writing or not _try_lock(fd, writing=False) else "reading"
        fcntl.flock(fd, fcntl.LOCK_UN)  # the shared lock just taken to ask, if it was
        raise another_run(self.url, doing=doing, who=who)

    def move_to(self, path: Path) -> None:
        """Claim the file that has just replaced the claimed one at ``path``, then let go of the old.

        The old file's lock is kept until the new one is taken: let go first, and another run
        that opened the name after the replace could take the store in between. If it took the
        new file in the instant before, StoreError says so.
        """
        if not self._held or self._fd is None:
            return
        fd = self._open(path)
        try:
            if not _try_lock(fd, writing=self._writing):
                raise another_run(self.url, doing="working on", who=_holder(fd))
        except BaseException:
            os.close(fd)
            raise
        os.close(self._fd)
        self._fd = fd

    def release(self) -> None:
        """Let go of the claim: closing the file lets go of its lock."""
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._held = None, False
