"""The one atomic writer: a new file gets the mode any new file gets there, and the process umask,
which every thread shares, is never touched to find it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from histfix import _atomic_write
from histfix._atomic_write import write_atomically


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("nameless", [True, False], ids=["O_TMPFILE", "named"])
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o027])
def test_a_new_file_gets_the_mode_the_umask_leaves(
    tmp_path: Path, umask: int, nameless: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not nameless:  # a system without O_TMPFILE (or /proc): a named probe, then a named temporary file
        monkeypatch.setattr(_atomic_write, "_unnamed", lambda folder, mode=0o600: None)
    old = os.umask(umask)
    try:
        write_atomically(tmp_path / "new.json", b"{}")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "new.json") == 0o666 & ~umask
    assert os.listdir(tmp_path) == ["new.json"]  # no probe, no temporary file left


def test_the_process_umask_is_never_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the umask means setting it for every thread at once: another thread creating a file in
    that instant would get the wrong mode. The writer asks the file system instead."""

    def refuse(mask: int) -> int:
        raise AssertionError(f"os.umask({mask:#o}) called")

    monkeypatch.setattr(os, "umask", refuse)
    target = tmp_path / "history.json"
    write_atomically(target, b"{}")  # a new file
    target.chmod(0o640)
    write_atomically(target, b"[]")  # a replaced one keeps its mode
    assert target.read_bytes() == b"[]" and _mode(target) == 0o640
