"""The JSON Schemas in docs/schemas/ that are generated from the typed structs the server reads
a format with (its contract module): `scripts/schemas.py` writes them, `--check` says which
differ from what the structs make (CI runs it through tests/schemas/test_generated.py).

    .venv/bin/python scripts/schemas.py          # regenerate
    .venv/bin/python scripts/schemas.py --check  # exit 1 if a committed schema is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memdash.allocations.logic.document import contract as snapshot  # noqa: E402
from memdash.churn.logic import contract as churn  # noqa: E402
from memdash.cycles.logic import contract as retain_cycles  # noqa: E402
from memdash.foom.logic import contract as sessions  # noqa: E402
from memdash.foom.logic import exitinfo_contract as exitinfo  # noqa: E402

SCHEMA_DIR = ROOT / "docs" / "schemas"
GENERATED: dict[str, Callable[[], dict[str, Any]]] = {
    "snapshot-v1.schema.json": snapshot.json_schema,
    "churn-v1.schema.json": churn.json_schema,
    "sessions-v1.schema.json": sessions.json_schema,
    "retain-cycles-v1.schema.json": retain_cycles.json_schema,
    "exitinfo-v1.schema.json": exitinfo.json_schema,
}


def text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def stale() -> list[str]:
    """The generated schemas whose committed file differs from what their structs make."""
    return [
        name
        for name, make in GENERATED.items()
        if not (SCHEMA_DIR / name).exists() or (SCHEMA_DIR / name).read_text() != text(make())
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which are stale")
    if parser.parse_args().check:
        names = stale()
        for name in names:
            print(f"docs/schemas/{name} is stale: run scripts/schemas.py", file=sys.stderr)
        return 1 if names else 0
    for name, make in GENERATED.items():
        (SCHEMA_DIR / name).write_text(text(make()))
        print(f"wrote docs/schemas/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
