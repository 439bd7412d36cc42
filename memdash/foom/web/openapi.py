"""What the FOOM API answers, as JSON Schema for its OpenAPI document (`core.web.schema`)."""

from __future__ import annotations

from memdash.core.web.schema import (
    BOOL,
    DATETIME,
    INT,
    NUMBER,
    OBJECT,
    STR,
    Schema,
    array,
    nullable,
    obj,
)

COUNTS: Schema = {"type": "object", "additionalProperties": INT}
BUILD_NAME = obj({"version": STR, "number": STR})


def rate(prefix: str) -> dict[str, Schema]:
    """A rate with its 95% Wilson interval, null where nothing was counted."""
    return {name: nullable(NUMBER) for name in (prefix, f"{prefix}_low", f"{prefix}_high")}


BUILD_FOOM = obj(
    {
        "build": BUILD_NAME,
        "build_id": INT,
        "sessions": INT,
        "classified": INT,
        "rate_sessions": INT,
        "foom": INT,
        **rate("foom_rate"),
        "devices": INT,
        "devices_seen": INT,
        "foom_devices": INT,
        **rate("user_rate"),
        "classes": COUNTS,
    }
)
SESSION = obj(
    {
        "id": STR,
        "app": INT,
        "build": BUILD_NAME,
        "device": obj({"id": STR, "model": STR}),
        "os": STR,
        "binary_uuid": STR,
        "boot_time": nullable(DATETIME),
        "started_at": DATETIME,
        "last_seen_at": nullable(DATETIME),
        "bot": BOOL,
        "end": nullable(OBJECT),
        "class": STR,
        "rule": nullable(INT),
        "rule_text": STR,
        "rule_name": STR,
        "rules_version": nullable(STR),
        "classified_at": nullable(DATETIME),
        "url": STR,
        "snapshots": array(obj({"id": INT, "captured_at": DATETIME, "trigger": STR, "url": STR})),
    }
)
OS_EXITS = obj(
    {
        "build": BUILD_NAME,
        "build_id": INT,
        "sources": array(STR),
        "reports": INT,
        "foreground_exits": INT,
        "foreground_memory": INT,
        **rate("memory_rate"),
        "background_exits": INT,
        "background_memory": INT,
        **rate("background_rate"),
        **rate("heuristic_foom_rate"),
        "foreground": COUNTS,
        "background": COUNTS,
        "reasons": {"type": "object", "additionalProperties": COUNTS},
        "agreement": nullable(
            obj(
                {
                    "basis": STR,
                    "bound": BOOL,
                    "days": INT,
                    "bound_days": INT,
                    "rules_version": STR,
                    "rules": array(
                        obj(
                            {
                                "rule": nullable(INT),
                                "rule_name": STR,
                                "compared": NUMBER,
                                "fooms": NUMBER,
                                "os_memory": NUMBER,
                                "false_fooms": NUMBER,
                                "missed": NUMBER,
                                "other_verdicts": {
                                    "type": "object",
                                    "additionalProperties": NUMBER,
                                },
                            }
                        )
                    ),
                }
            )
        ),
    }
)
