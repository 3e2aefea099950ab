from postgres_server import own_pg_server, pg_server  # noqa: F401 (the real PostgreSQL server's fixtures)
