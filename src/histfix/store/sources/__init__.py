"""The sources of histfix's store commands, and the one string that names each (CLI and API) and opens it.

``dir/`` (every ``*.json`` below it), ``file.jsonl``, ``sqlite:///path.db?table=T&key=K&column=C``
and ``postgresql://user:pw@host:port/db?table=T&key=K&column=C`` (also ``postgres://``). Anything
else is a ValueError with one line saying what was expected.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from .._source import DEFAULT_LOCK_TIMEOUT, TABLE_NAME, Source, StoreError, TableSpec

__all__ = ["mask_password", "names_table", "open_source", "parse_table_url"]

SQL_SCHEMES = ("sqlite", "postgresql", "postgres")
#: A table (optionally schema-qualified) or column name: quoted into SQL, so only plain identifiers.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def mask_password(url: str) -> str:
    """``url`` with its password, if any, shown as ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit(parts._replace(netloc=netloc))


def parse_table_url(url: str) -> TableSpec:
    """``scheme://...?table=T&key=K&column=C`` taken apart; ValueError naming what is wrong."""
    parts = urlsplit(url)
    masked = mask_password(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    missing = [name for name in ("table", "key", "column") if not query.get(name)]
    if missing:
        raise ValueError(f"{masked}: needs ?table=T&key=K&column=C (missing {', '.join(missing)})")
    table, key, column = query.pop("table"), query.pop("key"), query.pop("column")
    if not TABLE_NAME.fullmatch(table):
        raise ValueError(f"{masked}: table {table!r} is not a plain SQL name (letters, digits, _)")
    for what, name in (("key", key), ("column", column)):
        if not _IDENTIFIER.fullmatch(name):
            raise ValueError(f"{masked}: {what} {name!r} is not a plain SQL name (letters, digits, _)")
    # Rebuilt by hand: urlunsplit would fold sqlite:////abs/path's empty authority away.
    base = url.split("?", 1)[0]
    # Percent-encoded: libpq reads a "+" as itself, not as the space urlencode's default makes it.
    connect = f"{base}?{urlencode(query, quote_via=quote)}" if query else base
    return TableSpec(connect=connect, masked=masked, table=table, key=key, column=column)


def _scheme(url: str) -> str:
    return urlsplit(url).scheme if "://" in url else ""


def names_table(url: str) -> bool:
    """Whether ``url`` names an SQL table (``sqlite://``, ``postgresql://``) rather than files."""
    return _scheme(url) in SQL_SCHEMES


def open_source(url: str, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> Source:
    """The source ``url`` names, open; ValueError (StoreError) with one clear line if it cannot be.

    ``lock_timeout``: seconds an SQL source's statement waits for a row (PostgreSQL) or the file
    (SQLite) another connection holds locked (files have no locks to wait for).
    """
    if not lock_timeout > 0:
        raise ValueError(f"lock_timeout must be a positive number of seconds, not {lock_timeout!r}")
    scheme = _scheme(url)
    if scheme == "sqlite":
        from ._sqlite import SQLiteSource

        return SQLiteSource(parse_table_url(url), lock_timeout=lock_timeout)
    if scheme in ("postgresql", "postgres"):
        spec = parse_table_url(url)
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise StoreError("PostgreSQL sources need psycopg 3: pip install 'histfix[postgres]'") from None
        from ._postgres import open_postgres

        source: Source = open_postgres(spec, lock_timeout=lock_timeout)
        return source
    if scheme:
        raise ValueError(
            f"{mask_password(url)}: unknown store scheme {scheme!r} (expected sqlite:// or postgresql://)"
        )
    path = Path(url)
    if path.is_dir():
        from ._files import DirectorySource

        return DirectorySource(path)
    if url.endswith(".jsonl"):
        from ._files import JSONLSource

        return JSONLSource(path)
    if not path.exists():
        raise ValueError(f"{url}: no such directory or file")
    raise ValueError(
        f"{url}: not a store (expected a directory, a .jsonl file, sqlite:///... or postgresql://...)"
    )
