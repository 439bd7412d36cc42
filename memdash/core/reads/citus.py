"""Whether the database is a Citus coordinator: detected from the extension, no setting. Asked
by the migrations that distribute the tables and by the few writes that differ there
(retention's month drops), once per database a process uses."""

from __future__ import annotations

from django.db import connection as default_connection
from django.db.backends.base.base import BaseDatabaseWrapper

_known: dict[tuple[str, str, str], bool] = {}  # (host, port, database) -> has citus


def is_citus(connection: BaseDatabaseWrapper | None = None) -> bool:
    """True on a PostgreSQL database with the citus extension (the coordinator's)."""
    conn = connection or default_connection
    if conn.vendor != "postgresql":
        return False
    where = conn.settings_dict
    key = (str(where.get("HOST")), str(where.get("PORT")), str(where.get("NAME")))
    if key not in _known:
        with conn.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
            _known[key] = cursor.fetchone() is not None
    return _known[key]
