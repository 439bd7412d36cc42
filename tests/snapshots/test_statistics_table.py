"""The statistics table sorted, searched and paged by the database: API and page, against an
order worked out by hand."""

from __future__ import annotations

import pytest

from memdash.allocations.logic.analysis import table_summary
from memdash.allocations.models import Snapshot
from tests.samples import spec_example

pytestmark = pytest.mark.django_db

# (category, persistent, persistent bytes, transient, transient bytes); total bytes in the
# comment. Alpha and beta tie on total bytes (100): the name breaks the tie, "Alpha" < "beta".
ROWS = [
    ("Alpha", 1, 100, 0, 0),  # 100
    ("beta", 2, 50, 1, 50),  # 100
    ("Gamma", 0, 0, 3, 300),  # 300, transient only
    ("Delta", 5, 500, 0, 0),  # 500
    ("VM: Epsilon", 1, 4096, 0, 0),  # 4096, anonymous VM
]
BY_TOTAL_BYTES = ["VM: Epsilon", "Delta", "Gamma", "Alpha", "beta"]


def table_doc() -> dict:
    doc = spec_example(generations=[])
    doc["allocations"] = [
        {"category": c, "stack": 3, "persistent": p, "persistent_bytes": pb, "transient": t,
         "transient_bytes": tb}
        for c, p, pb, t, tb in ROWS
    ]  # fmt: skip
    return doc


@pytest.fixture
def snapshot_id(upload) -> int:
    response = upload(table_doc())
    assert response.json()["status"] == "done", response.json()
    return response.json()["snapshot"]["id"]


def names(answer: dict) -> list[str]:
    return [r["category"] for r in answer["rows"]]


def get(api_client, snapshot_id: int, **params):
    return api_client.get(f"/api/v1/snapshots/{snapshot_id}/statistics", params)


def test_largest_first_with_ties_by_name(api_client, snapshot_id):
    answer = get(api_client, snapshot_id).json()
    assert names(answer) == BY_TOTAL_BYTES
    assert (answer["count"], answer["offset"], answer["limit"], answer["next"]) == (5, 0, 500, None)


def test_pages_follow_each_other(api_client, snapshot_id):
    first = get(api_client, snapshot_id, limit=2).json()
    assert names(first) == ["VM: Epsilon", "Delta"]
    assert first["count"] == 5
    second = api_client.get(first["next"]).json()
    assert names(second) == ["Gamma", "Alpha"]
    last = api_client.get(second["next"]).json()
    assert names(last) == ["beta"]
    assert last["next"] is None
    # Every page carries the summary of the whole table: heap 100+100+300+500 bytes.
    assert last["summary"][1]["total_bytes"] == 1000


def test_sorts(api_client, snapshot_id):
    by_name = get(api_client, snapshot_id, sort="category", dir="asc").json()
    assert names(by_name) == ["Alpha", "beta", "Delta", "Gamma", "VM: Epsilon"]  # case-blind
    by_count = get(api_client, snapshot_id, sort="persistent", dir="asc").json()
    # 0 (Gamma), 1 (Alpha, VM: Epsilon: by name), 2 (beta), 5 (Delta)
    assert names(by_count) == ["Gamma", "Alpha", "VM: Epsilon", "beta", "Delta"]


def test_lifespan_lists_only_what_it_keeps(api_client, snapshot_id):
    answer = get(api_client, snapshot_id, lifespan="persistent").json()
    # Gamma has only freed allocations; beta's total is its 50 persistent bytes now.
    assert names(answer) == ["VM: Epsilon", "Delta", "Alpha", "beta"]
    assert answer["count"] == 4
    heap = answer["summary"][1]
    assert (heap["persistent"], heap["persistent_bytes"], heap["transient"]) == (8, 650, 0)


def test_search_counts_the_matches_and_sums_them(api_client, snapshot_id):
    # (behaviour changed: the summary rows summed the whole table whatever the search)
    answer = get(api_client, snapshot_id, q="TA").json()
    assert names(answer) == ["Delta", "beta"]
    assert answer["count"] == 2
    # as Instruments' summary rows do, they follow the search: Delta 500 + beta 100 bytes, both
    # heap; no anonymous VM matches. Their names say what they sum.
    summary = [(r["category"], r["total_bytes"], r["total"]) for r in answer["summary"]]
    assert summary == [
        ("All Heap & Anonymous VM (matching “TA”)", 600, 5 + 3),
        ("All Heap Allocations (matching “TA”)", 600, 5 + 3),
        ("All Anonymous VM (matching “TA”)", 0, 0),
    ]
    nothing = get(api_client, snapshot_id, q="zzzz").json()
    assert (nothing["count"], nothing["rows"]) == (0, [])
    assert [r["total_bytes"] for r in nothing["summary"]] == [0, 0, 0]
    # without a search, the stored summary of the whole table, named as Instruments names it
    whole = get(api_client, snapshot_id).json()["summary"][0]
    assert (whole["category"], whole["total_bytes"]) == ("All Heap & Anonymous VM", 1000 + 4096)


def test_page_summary_follows_the_search(member_client, snapshot_id):
    html = member_client.get(f"/snapshots/{snapshot_id}/?q=zzzz").content.decode()
    assert "All Heap &amp; Anonymous VM (matching “zzzz”)" in html
    assert "No allocations match “zzzz”" in html
    row = html[html.index("(matching “zzzz”)") :].split("</tr>")[0]
    assert '<td class="num">0 Bytes</td>' in row


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "10001"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"sort": "size"}, "sort"),
        ({"dir": "up"}, "dir"),
    ],
)
def test_bad_parameters_are_refused_with_their_name(api_client, snapshot_id, params, path):
    response = get(api_client, snapshot_id, **params)
    assert response.status_code == 400
    assert path in response.json()["fields"]


def test_the_page_searches_and_sorts_in_the_database(member_client, snapshot_id):
    page = member_client.get(f"/snapshots/{snapshot_id}/", {"q": "ta", "sort": "category"})
    text = page.content.decode()
    assert page.status_code == 200
    assert "Delta" in text and "beta" in text and "Gamma" not in text
    assert text.index("Delta") < text.index("beta")  # by name, descending


def test_snapshots_stored_before_the_summary_get_it_summed(api_client, snapshot_id):
    stored = get(api_client, snapshot_id, lifespan="transient").json()
    Snapshot.objects.filter(pk=snapshot_id).update(table_summary={})
    summed = get(api_client, snapshot_id, lifespan="transient").json()
    assert summed == stored
    # Created & Destroyed: beta (1, 50) and Gamma (3, 300), both heap.
    assert summed["count"] == 2
    heap = summed["summary"][1]
    assert (heap["transient"], heap["transient_bytes"], heap["persistent"]) == (4, 350, 0)


def test_table_summary_by_hand():
    summary = table_summary([(c, counts) for c, *counts in ROWS])
    # [categories, p, pb, t, tb]; heap: Alpha, beta, Gamma, Delta; VM: Epsilon.
    assert summary["all"] == {"heap": [4, 8, 650, 4, 350], "vm": [1, 1, 4096, 0, 0]}
    assert summary["persistent"]["heap"] == [3, 8, 650, 0, 0]
    assert summary["transient"] == {"heap": [2, 0, 0, 4, 350], "vm": [0, 0, 0, 0, 0]}
