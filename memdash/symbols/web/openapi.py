"""Debug files and symbolication jobs as the API answers them (`as_json`), in JSON Schema for
the OpenAPI document (`core.web.schema`)."""

from __future__ import annotations

from memdash.core.web.schema import DATETIME, INT, STR, array, nullable, obj

OUTCOMES = ["stored", "replaced", "same", "kept"]  # services.StoredObject.outcome

DEBUG_FILE = obj(
    {
        "id": INT,
        "image": STR,
        "arch": STR,
        "debug_id": STR,
        "code_id": STR,
        "kind": STR,
        "features": array(STR),
        "size": INT,
        "sha256": STR,
        "file": STR,
        "uploaded_at": DATETIME,
    }
)
SYMBOLICATION_JOB = obj(
    {
        "id": INT,
        "state": STR,
        "snapshots_total": INT,
        "snapshots_done": INT,
        "frames_named": INT,
        "error": STR,
    }
)
DEBUG_FILES_STORED = obj(
    {
        "objects": array(
            obj({**DEBUG_FILE["properties"], "outcome": {"type": "string", "enum": OUTCOMES}})
        ),
        "symbolication": nullable(SYMBOLICATION_JOB),
    }
)
