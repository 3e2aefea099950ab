"""Make 127.0.0.1 reachable inside a fresh network namespace (`unshare -rn`), where `lo` starts down.

A namespace made by `unshare -n` has a loopback interface that is down: a server can bind
127.0.0.1 but no client can connect ("Network is unreachable"). The process is root in its own
user namespace there, so it may bring that namespace's `lo` up; nothing outside the namespace is
touched, and where loopback already works this does nothing.
"""

from __future__ import annotations

import errno
import fcntl
import socket
import struct

__all__ = ["ensure_loopback"]

_SIOCGIFFLAGS = 0x8913  # linux/sockios.h
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFREQ = "16sH14x"  # struct ifreq: the interface name, then ifr_flags in the union


def _reachable(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError as error:
        if error.errno in (errno.ENETUNREACH, errno.EADDRNOTAVAIL):
            return False
        raise
    return True


def ensure_loopback(port: int) -> None:
    """Return once a client can connect to the server listening on 127.0.0.1:`port`.

    Brings `lo` up when it is down (a fresh network namespace); raises `RuntimeError` saying why
    when that is not allowed.
    """
    if _reachable(port):
        return
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        try:
            request = struct.pack(_IFREQ, b"lo", 0)
            name, flags = struct.unpack(_IFREQ, fcntl.ioctl(control, _SIOCGIFFLAGS, request))
            fcntl.ioctl(control, _SIOCSIFFLAGS, struct.pack(_IFREQ, name, flags | _IFF_UP))
        except OSError as error:
            raise RuntimeError(
                f"127.0.0.1 is unreachable (loopback is down) and bringing it up failed: {error}"
            ) from error
    if not _reachable(port):
        raise RuntimeError("127.0.0.1 is still unreachable after bringing loopback up")
