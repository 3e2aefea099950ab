"""Replacing a regular file atomically: the one writer the CLI and the file stores share.

The new content goes to a temporary file in the target's own folder, which is then renamed over
the target, so the rename is atomic: a crash, a signal or a full disk leaves the old file (or
none) in place, never a truncated one. On Linux the temporary file has no name at all until the
instant it replaces the target (``O_TMPFILE``, then a link and the rename), so even ``kill -9``
mid-write leaves nothing behind; elsewhere, or on a file system without it, it is a hidden
``.NAME.*.tmp`` file that every exit but ``kill -9`` removes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from pathlib import Path

__all__ = ["TemporaryFile", "write_atomically"]


def _new_file_mode(folder: Path) -> int:
    """The mode a new regular file gets in ``folder``: asked of the file system by creating one (0666,
    less the umask, as the kernel applies it), nameless where it can be. Reading the umask itself
    means setting it, for the whole process: a thread creating a file meanwhile would get the wrong one."""
    probe = _unnamed(folder, 0o666)
    if probe is not None:
        try:
            return stat.S_IMODE(os.fstat(probe).st_mode)
        finally:
            os.close(probe)
    name = folder / f".histfix-mode-{secrets.token_hex(4)}.tmp"
    probe = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        return stat.S_IMODE(os.fstat(probe).st_mode)
    finally:
        os.close(probe)
        name.unlink(missing_ok=True)


def _unnamed(folder: Path, mode: int = 0o600) -> int | None:
    """An fd on a new, nameless file in ``folder`` (Linux ``O_TMPFILE``), or None where there is none."""
    flags = getattr(os, "O_TMPFILE", 0)
    # A nameless file gets its name through /proc's link to it: without /proc it could not.
    if not flags or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flags | os.O_RDWR | os.O_CLOEXEC, mode)
    except OSError:  # a file system (or kernel) without it
        return None


class TemporaryFile:
    """The file that will replace ``target``: :attr:`fd` to write (and fsync) it through, then
    :meth:`replace` puts it in place, or :meth:`discard` drops it. Starts private (0600)."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.folder = target.parent if str(target.parent) else Path(".")
        found = _unnamed(self.folder)
        self.path: Path | None = None  # its name, while it has one
        if found is None:
            found, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=self.folder)
            self.path = Path(name)
        self.fd = found

    def _named(self) -> Path:
        if self.path is None:
            name = f".{self.target.name}.{secrets.token_hex(4)}.tmp"
            folder = os.open(self.folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
            try:
                # A folder's fd makes this linkat(), which (unlike link()) follows /proc's link
                # to the file itself.
                os.link(f"/proc/self/fd/{self.fd}", name, dst_dir_fd=folder, follow_symlinks=True)
                self.path = self.folder / name
            except OSError:  # a /proc that will not link (some sandboxes): a named copy instead
                self._copy_to_a_named_file()
            finally:
                os.close(folder)
        assert self.path is not None
        return self.path

    def _copy_to_a_named_file(self) -> None:
        nameless = self.fd
        self.fd, name = tempfile.mkstemp(prefix=f".{self.target.name}.", suffix=".tmp", dir=self.folder)
        self.path = Path(name)
        try:
            made = os.fstat(nameless)
            os.fchmod(self.fd, stat.S_IMODE(made.st_mode))
            if (made.st_uid, made.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):
                    os.fchown(self.fd, made.st_uid, made.st_gid)
            os.lseek(nameless, 0, os.SEEK_SET)
            while chunk := os.read(nameless, 1 << 20):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(self.fd, view) :]
            os.fsync(self.fd)
        finally:
            os.close(nameless)

    def set_mode(self, mode: int, owner: tuple[int, int] | None = None) -> None:
        """Give it ``mode`` and, where the process may, ``owner`` (uid, gid)."""
        if self.path is None:
            os.fchmod(self.fd, mode)
        else:
            os.chmod(self.path, mode)
        if owner is not None:
            with contextlib.suppress(OSError):  # only root may give a file away: keep what we can
                os.chown(self.path if self.path is not None else self.fd, *owner)

    def replace(self) -> None:
        """Rename it over the target (a nameless one is named the instant before)."""
        os.replace(self._named(), self.target)
        self.path = None
        self.close()

    def discard(self) -> None:
        """Drop it: a nameless one vanishes with its fd; a named one is removed."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def write_atomically(target: Path, data: bytes) -> None:
    """Replace the regular file ``target`` (or create it) with ``data``, atomically (see the
    module docstring). A replaced file keeps its mode (and, where the process may, its owner); a
    new one gets the mode the umask gives, as with any Unix tool."""
    temporary = TemporaryFile(target)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(temporary.fd, view) :]
        os.fsync(temporary.fd)
        try:
            old: os.stat_result | None = target.stat()
        except FileNotFoundError:
            old = None
        if old is None:
            temporary.set_mode(_new_file_mode(temporary.folder))
        else:
            keep = (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid())
            temporary.set_mode(stat.S_IMODE(old.st_mode), (old.st_uid, old.st_gid) if keep else None)
        temporary.replace()
    except BaseException:
        temporary.discard()
        raise
