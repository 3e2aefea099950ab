from postgres_server import pg_server  # noqa: F401 (the real PostgreSQL server fixture)
