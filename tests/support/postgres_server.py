"""A real PostgreSQL server for the store tests: a pytest plugin (tests/conftest.py loads it).

The server is Debian's `postgresql` package (any PostgreSQL >= 14 whose `pg_ctl` is found), run by
pytest-postgresql's executor in a temporary directory on a free 127.0.0.1 port, with timeouts, and
stopped when the session ends. PostgreSQL refuses to run as root and CI runs as root, so under
euid 0 `pg_ctl` runs as the `postgres` system user (the Debian package creates it) through
`runuser`, in a directory that user owns.

Tests connect as `histfix` with a password (scram-sha-256 over TCP, so a wrong password is
refused); the fixture itself administers as the trusted superuser `postgres`.

Without `pg_ctl` or psycopg the PostgreSQL tests skip, except under CI (`CI` set), where that is a
missing install step and fails.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

SUPERUSER = "postgres"
USER = "histfix"
PASSWORD = "s3cret pw"
DBNAME = "histories"
#: Seconds any start or stop of the server may take before the fixture gives up.
TIMEOUT = 60


def find_pg_ctl() -> str | None:
    """The newest `pg_ctl` Debian's packages installed (or one on PATH), else None."""
    found = glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")
    if found:
        return max(found, key=lambda path: int(Path(path).parts[-3]))
    return shutil.which("pg_ctl")


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must install it: see .ci/run)")
    pytest.skip(reason)


@dataclass
class PgServer:
    """One running PostgreSQL cluster and how to reach it."""

    executor: Any  # pytest_postgresql.executors.PostgreSQLExecutor
    host: str
    port: int
    workdir: Path
    tables: list[str] = field(default_factory=list)

    def conninfo(self, *, user: str = USER, password: str | None = PASSWORD, dbname: str = DBNAME) -> str:
        auth = quote(user) + (f":{quote(password)}" if password is not None else "")
        return f"postgresql://{auth}@{self.host}:{self.port}/{dbname}"

    def url(self, table: str, *, key: str = "id", column: str = "messages", **conn: Any) -> str:
        """The source string histfix opens for `table` (columns `key`, `column`)."""
        return f"{self.conninfo(**conn)}?table={quote(table)}&key={quote(key)}&column={quote(column)}"

    def admin(self, dbname: str = DBNAME) -> Any:
        """An autocommit superuser connection (the caller closes it)."""
        import psycopg

        conninfo = f"host={self.host} port={self.port} user={SUPERUSER} dbname={dbname} connect_timeout=10"
        return psycopg.connect(conninfo, autocommit=True)

    def execute(self, query: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run one statement as the superuser in the test database; its rows, if it returns any."""
        with self.admin() as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []

    def make_table(self, column_type: str, rows: list[tuple[Any, Any]], *, key_type: str = "bigint") -> str:
        """A fresh table `(id key_type PRIMARY KEY, messages column_type)` holding `rows`; its name."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        with self.admin() as conn:
            conn.execute(f"CREATE TABLE {name} (id {key_type} PRIMARY KEY, messages {column_type})")
            with conn.cursor() as cursor:
                cursor.executemany(f"INSERT INTO {name} (id, messages) VALUES (%s, %s)", rows)
            conn.execute(f"GRANT SELECT, UPDATE ON {name} TO {USER}")
        self.tables.append(name)
        return name

    def stop(self) -> None:
        """Stop the server (fast shutdown: clients are disconnected)."""
        self.executor.stop()

    def start(self) -> None:
        """Start it again on the same port and data, and wait until it accepts connections."""
        self.executor.start()
        _wait_until_ready(self)


def _pg_ctl_for(pg_ctl: str, top: Path, cluster: Path) -> str:
    """`pg_ctl` itself, or under euid 0 a wrapper in `top` that runs it as the `postgres` user."""
    if os.geteuid() != 0:
        return pg_ctl
    try:
        owner = pwd.getpwnam("postgres")
    except KeyError:
        _missing("running as root needs the `postgres` system user (Debian's postgresql package makes it)")
    runuser = shutil.which("runuser") or "/usr/sbin/runuser"
    # The postgres user owns the cluster's directory but not `top`, where the wrapper root runs
    # lives; `cd /` because that user may not be allowed into the tests' working directory.
    top.chmod(0o755)
    os.chown(cluster, owner.pw_uid, owner.pw_gid)
    wrapper = top / "pg_ctl"
    wrapper.write_text(f'#!/bin/sh\ncd / && exec {runuser} -u postgres -- {pg_ctl} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def _wait_until_ready(server: PgServer) -> None:
    """Wait for connections to be accepted: the port opens before the server finishes starting."""
    import psycopg

    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            server.admin("postgres").close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _allow_password_login(server: PgServer) -> None:
    """Create the test role and database; `histfix` must log in with its password over TCP."""
    datadir = Path(server.executor.datadir)
    hba = datadir / "pg_hba.conf"
    # First match wins: the test role's scram line goes before initdb's trust lines.
    rule = f"host all {USER} 127.0.0.1/32 scram-sha-256\n"
    hba.write_text(rule + hba.read_text())
    with server.admin("postgres") as conn:
        # CREATE ROLE takes no bind parameters: the password is a literal quoted by the server's rules.
        conn.execute(f"CREATE ROLE {USER} LOGIN PASSWORD '{PASSWORD}'")
        conn.execute(f"CREATE DATABASE {DBNAME} OWNER {SUPERUSER}")
        conn.execute(f"GRANT CONNECT ON DATABASE {DBNAME} TO {USER}")
        conn.execute("SELECT pg_reload_conf()")


def start_server() -> PgServer:
    """Initialise and start a new cluster in a temporary directory on a free port."""
    try:
        import port_for
        import psycopg  # noqa: F401
        from pytest_postgresql.executors import PostgreSQLExecutor
    except ImportError as error:
        _missing(f"the PostgreSQL tests need psycopg and pytest-postgresql ({error})")
    pg_ctl = find_pg_ctl()
    if pg_ctl is None:
        _missing("no pg_ctl: install Debian's postgresql package")
    assert pg_ctl is not None
    workdir = Path(tempfile.mkdtemp(prefix="histfix-pg-"))
    cluster = workdir / "cluster"
    cluster.mkdir(mode=0o700)
    executable = _pg_ctl_for(pg_ctl, workdir, cluster)
    host, port = "127.0.0.1", port_for.get_port(None)
    executor = PostgreSQLExecutor(
        executable=executable,
        host=host,
        port=port,
        datadir=str(cluster / "data"),
        unixsocketdir=str(cluster),
        logfile=str(cluster / "postgresql.log"),
        startparams=f"-w -t {TIMEOUT}",
        dbname=DBNAME,
        user=SUPERUSER,
        timeout=TIMEOUT,
        # fsync off: the tests' crashes are client crashes (kill -9 of histfix), never the server's.
        postgres_options="-c fsync=off -c listen_addresses=127.0.0.1",
    )
    executor.start()
    server = PgServer(executor=executor, host=host, port=port, workdir=workdir)
    try:
        _wait_until_ready(server)
        _allow_password_login(server)
    except BaseException:
        _shut_down(server)
        raise
    return server


def _shut_down(server: PgServer) -> None:
    try:
        if server.executor.running():
            server.executor.stop()
    finally:
        shutil.rmtree(server.workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The session's PostgreSQL server (each test makes tables of its own in it)."""
    server = start_server()
    try:
        yield server
    finally:
        _shut_down(server)
