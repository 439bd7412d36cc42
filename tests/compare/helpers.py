"""Small snapshot documents whose diffs the compare tests work out by hand.

Stacks (outermost first): 0 main; 1 main > -[Feed load]; 2 … > -[Cache store]; 3 … > -[Cell init].
"""

from __future__ import annotations

FRAMES = ["main", "-[Feed load]", "-[Cache store]", "-[Cell init]"]
STACKS = [[None, 0], [0, 1], [1, 2], [1, 3]]
GENERATIONS = [
    {"name": "Launch", "at_ms": 0},
    {"name": "Open", "at_ms": 1000},
    {"name": "Idle", "at_ms": 2000},  # no allocations are created in it
]


def row(category, stack, generation, persistent, persistent_bytes, transient=0, tbytes=0):
    return {
        "category": category, "stack": stack, "generation": generation,
        "persistent": persistent, "persistent_bytes": persistent_bytes,
        "transient": transient, "transient_bytes": tbytes,
    }  # fmt: skip


# Per generation, persistent (count, bytes):
#   baseline: Cache (2, 200)
#   0 Launch: Cache (3, 300), Cell (10, 640), Old (1, 32)
#   1 Open:   Cache (5, 500), Cell (4, 256), NoStack (1, 16)  [Cache also 2 transient, 200 B]
#   2 Idle:   nothing
SNAPSHOT_A_ROWS = [
    row("Cache", 2, None, 2, 200, 1, 100),
    row("Cache", 2, 0, 3, 300),
    row("Cache", 2, 1, 5, 500, 2, 200),
    row("Cell", 3, 0, 10, 640),
    row("Cell", 3, 1, 4, 256),
    row("Old", 1, 0, 1, 32),
    row("NoStack", None, 1, 1, 16),
]

# One generation-less snapshot of another build: Cache (20, 2000), Cell (14, 896), New (1, 1000)
SNAPSHOT_B_ROWS = [
    row("Cache", 2, None, 20, 2000),
    row("Cell", 3, None, 14, 896),
    row("New", 3, None, 1, 1000),
]


def document(
    rows,
    version="1.0",
    number="1",
    device="D-1",
    model="iPhone14,5",
    os="iOS 17.4",
    trigger="periodic",
    generations=None,
    captured_at="2026-11-20T10:00:00+00:00",
) -> dict:
    return {
        "format": "memdash.snapshot",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "build": {"version": version, "number": number},
        "device": {"id": device, "model": model, "os": os},
        "captured_at": captured_at,
        "trigger": trigger,
        "frames": FRAMES,
        "stacks": STACKS,
        "generations": GENERATIONS if generations is None else generations,
        "allocations": rows,
    }


def store(upload, doc) -> int:
    """Upload a document through the API; the id of the snapshot it made."""
    response = upload(doc)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "done", body
    return body["snapshot"]["id"]


def compare(api_client, app, **params) -> dict:
    """Build compare 1.0 (1) -> 2.0 (2) through the API, its answer checked and read."""
    response = api_client.get(
        f"/api/v1/apps/{app.pk}/compare", {"base": "1.0:1", "target": "2.0:2", **params}
    )
    assert response.status_code == 200, response.content
    return response.json()


def by_category(body: dict) -> dict[str, dict]:
    return {r["category"]: r for r in body["rows"]}
