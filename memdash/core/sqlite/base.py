"""Django's SQLite backend, which makes the directory of its database file when it first opens
it: the embedded default lives in `var/`, which a fresh clone does not have, and sqlite cannot
create a file in a missing directory. Made here, where the file is written, rather than by
settings at import (importing settings must not touch the disk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db.backends.sqlite3 import base


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        if not self.is_in_memory_db():
            Path(conn_params["database"]).parent.mkdir(parents=True, exist_ok=True)
        return super().get_new_connection(conn_params)
