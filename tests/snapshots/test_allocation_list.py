"""The Allocations List: its entries, sort, filters, keyset pages, the stack of a row, pruned
rows, CSV and the build's list. Expected values from the spec example (tests/samples.py) by
hand:

  after merging its two MessageCell rows, the snapshot holds three rows:
  - MessageCell, stack 3 (main → UIApplicationMain → -[ChatViewController viewDidLoad] →
    -[MessageCell initWithStyle:]), thread main, generation 1 "Open chat":
    13 live (9,216 + 768 = 9,984 B), 30 freed (23,040 B)
  - Malloc 48 Bytes, stack 2, no thread, generation 0 "Launch": 100 live (4,800 B)
  - VM: CoreAnimation, stack 1 (main → UIApplicationMain), generation 1:
    2 live (4,194,304 B), 1 freed (2,097,152 B)
  so five entries; by size: 4,194,304 · 2,097,152 · 23,040 · 9,984 · 4,800.
  Responsible callers (first frame outside the system image UIKitCore, from the allocation
  out): stack 3 → -[MessageCell initWithStyle:]; stack 2 → -[ChatViewController viewDidLoad];
  stack 1 → UIApplicationMain is UIKitCore's, so main.
"""

from __future__ import annotations

import csv
import io

import pytest

from memdash.allocations.models import Snapshot
from memdash.allocations.writes.retention import prune_snapshot_rows
from tests.samples import spec_example

pytestmark = pytest.mark.django_db

BY_SIZE = [
    ("VM: CoreAnimation", True, 2, 4194304),
    ("VM: CoreAnimation", False, 1, 2097152),
    ("MessageCell", False, 30, 23040),
    ("MessageCell", True, 13, 9984),
    ("Malloc 48 Bytes", True, 100, 4800),
]


@pytest.fixture(params=["rows", "made"])
def upload(request, upload, django_capture_on_commit_callbacks):
    """Every test twice: the list read from the snapshot's rows, and from the list made ahead
    once the upload committed (the stored signal's task, run at once by the default backend)."""
    if request.param == "rows":
        return upload

    def send(*args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return upload(*args, **kwargs)

    return send


@pytest.fixture
def snapshot_id(upload) -> int:
    body = upload(spec_example()).json()
    assert body["status"] == "done", body
    return body["snapshot"]["id"]


def api(api_client, snapshot_id, query=""):
    return api_client.get(f"/api/v1/snapshots/{snapshot_id}/allocations{query}")


def entries(answer) -> list[tuple]:
    return [(r["category"], r["live"], r["count"], r["size"]) for r in answer["rows"]]


def test_entries_by_size_with_callers_generations_and_threads(api_client, snapshot_id):
    response = api(api_client, snapshot_id)
    assert response.status_code == 200, response.content
    data = response.json()
    assert entries(data) == BY_SIZE
    assert data["next"] is None and data["previous"] is None and data["pruned_snapshots"] == []
    by_key = {(r["category"], r["live"]): r for r in data["rows"]}
    cell = by_key[("MessageCell", True)]
    assert (cell["responsible_caller"], cell["thread"]) == ("-[MessageCell initWithStyle:]", "main")
    assert (cell["generation"], cell["generation_name"]) == (1, "Open chat")
    malloc = by_key[("Malloc 48 Bytes", True)]
    assert malloc["responsible_caller"] == "-[ChatViewController viewDidLoad]"
    assert (malloc["thread"], malloc["generation_name"]) == (None, "Launch")
    vm = by_key[("VM: CoreAnimation", False)]
    assert (vm["responsible_caller"], vm["kind"]) == ("main", "vm")
    # the live and freed entries of one row share its row and stack
    assert vm["row"] == by_key[("VM: CoreAnimation", True)]["row"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?sort=size&dir=asc", BY_SIZE[::-1]),
        ("?sort=count", [BY_SIZE[4], BY_SIZE[2], BY_SIZE[3], BY_SIZE[0], BY_SIZE[1]]),
        ("?lifespan=persistent", [BY_SIZE[0], BY_SIZE[3], BY_SIZE[4]]),
        ("?lifespan=transient", [BY_SIZE[1], BY_SIZE[2]]),
        ("?generation=0", [BY_SIZE[4]]),
        ("?generation=1&lifespan=transient", [BY_SIZE[1], BY_SIZE[2]]),
        ("?generation=baseline", []),
        ("?q=cell", [BY_SIZE[2], BY_SIZE[3]]),
        ("?q=CORE", [BY_SIZE[0], BY_SIZE[1]]),
        ("?category=MessageCell&lifespan=persistent", [BY_SIZE[3]]),
        ("?q=nothing-like-it", []),
    ],
)
def test_sorts_and_filters(api_client, snapshot_id, query, expected):
    response = api(api_client, snapshot_id, query)
    assert response.status_code == 200, response.content
    assert entries(response.json()) == expected


def test_category_sort_is_by_name_any_case_then_row(api_client, snapshot_id):
    names = [r[0] for r in entries(api(api_client, snapshot_id, "?sort=category&dir=asc").json())]
    assert names == ["Malloc 48 Bytes", "MessageCell", "MessageCell", "VM: CoreAnimation",
                     "VM: CoreAnimation"]  # fmt: skip
    live = [r["live"] for r in api(api_client, snapshot_id, "?sort=live").json()["rows"]]
    assert live == [True, True, True, False, False]


def test_keyset_pages_forward_and_back(api_client, snapshot_id):
    first = api(api_client, snapshot_id, "?limit=2").json()
    assert entries(first) == BY_SIZE[:2] and first["previous"] is None
    second = api_client.get(first["next"]).json()
    assert entries(second) == BY_SIZE[2:4]
    third = api_client.get(second["next"]).json()
    assert entries(third) == BY_SIZE[4:] and third["next"] is None
    back = api_client.get(third["previous"]).json()
    assert entries(back) == BY_SIZE[2:4]
    assert entries(api_client.get(back["previous"]).json()) == BY_SIZE[:2]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("?sort=snapshot", "sort"),  # a snapshot's list has one snapshot: no such column
        ("?dir=up", "dir"),
        ("?lifespan=forever", "lifespan"),
        ("?generation=x", "generation"),
        ("?limit=0", "limit"),
        ("?limit=1001", "limit"),
        ("?after=garbage", "after"),
        ("?before=1.2.3", "before"),  # live must be 0 or 1
        (f"?after=1.{2**63}.1", "after"),  # a row id past 64 bits
        ("?q=" + "x" * 201, "q"),
    ],
)
def test_bad_parameters_are_400_naming_them(api_client, snapshot_id, query, parameter):
    response = api(api_client, snapshot_id, query)
    assert response.status_code == 400, response.content
    assert parameter in response.json()["fields"]


def test_a_cursor_of_another_sort_names_no_place_in_this_one(api_client, snapshot_id):
    cursor = api(api_client, snapshot_id, "?limit=1").json()["next"].split("after=")[1]
    response = api(api_client, snapshot_id, f"?sort=category&after={cursor}")
    assert response.status_code == 404 and response.json()["path"] == "after"


def test_stack_of_a_row_innermost_first(api_client, snapshot_id):
    rows = api(api_client, snapshot_id, "?category=MessageCell").json()["rows"]
    stack = rows[0]["stack"]
    response = api_client.get(f"/api/v1/snapshots/{snapshot_id}/stack?id={stack}")
    assert response.status_code == 200, response.content
    frames = response.json()["frames"]
    assert [f["label"] for f in frames] == [
        "-[MessageCell initWithStyle:]",
        "-[ChatViewController viewDidLoad]",
        "UIApplicationMain",
        "main",
    ]
    assert [f["image"] for f in frames] == ["", "", "UIKitCore", ""]
    assert [f["system"] for f in frames] == [False, False, True, False]
    assert frames[0]["node"] == stack  # the call tree's id of the row's node
    for query in ("?id=1", "?id=x", "?id=", f"?id={2**63}"):
        status = api_client.get(f"/api/v1/snapshots/{snapshot_id}/stack{query}").status_code
        assert status == (404 if query == "?id=1" else 400), query


def test_the_page_lists_and_links(member_client, snapshot_id):
    response = member_client.get(f"/snapshots/{snapshot_id}/allocations/?sort=size")
    assert response.status_code == 200
    html = response.content.decode()
    table = html[html.index('id="allocations"') :].split("</table>")[0]
    assert table.count('<tr tabindex="0"') == 5
    assert "● live" in table and "freed" in table and "4.00 MiB" in table
    assert 'data-tree="/snapshots/' in table
    assert 'src="/static/js/allocations_page.js"' in html or "allocations_page" in html
    snapshot_page = member_client.get(f"/snapshots/{snapshot_id}/").content.decode()
    assert f'href="/snapshots/{snapshot_id}/allocations/"' in snapshot_page
    for query in ("?sort=nope", "?after=zz", "?generation=7"):
        status = member_client.get(f"/snapshots/{snapshot_id}/allocations/{query}").status_code
        assert status == 404, query


def test_csv_lists_every_entry_in_order(member_client, snapshot_id):
    response = member_client.get(f"/snapshots/{snapshot_id}/allocations/?format=csv&limit=1")
    body = b"".join(response.streaming_content).decode()
    rows = list(csv.reader(io.StringIO(body)))
    assert rows[0][:5] == ["Snapshot", "Category", "Live", "Count", "Size (bytes)"]
    assert [(r[1], r[2], int(r[3]), int(r[4])) for r in rows[1:]] == [
        (c, "yes" if live else "no", n, b) for c, live, n, b in BY_SIZE
    ]
    assert rows[1][6] == "main"
    # a cell a spreadsheet would run as a formula goes out behind an apostrophe (core's rule)
    assert rows[3][6] == "'-[MessageCell initWithStyle:]"


def test_pruned_rows_are_said_not_shown_empty(member_client, api_client, snapshot_id):
    prune_snapshot_rows(Snapshot.objects.get(pk=snapshot_id))
    data = api(api_client, snapshot_id).json()
    assert data["rows"] == [] and data["pruned_snapshots"] == [snapshot_id]
    html = member_client.get(f"/snapshots/{snapshot_id}/allocations/").content.decode()
    assert "pruned by retention" in html


def test_build_list_has_the_snapshot_as_a_column(api_client, member_client, upload, snapshot_id):
    other = upload(spec_example(device={"id": "B2"})).json()["snapshot"]["id"]
    snapshot = Snapshot.objects.get(pk=snapshot_id)
    url = f"/api/v1/apps/{snapshot.app_id}/builds/{snapshot.build_id}/allocations"
    data = api_client.get(url + "?sort=size&limit=4").json()
    # both snapshots' two largest entries: equal sizes, then by row id (the second upload's
    # rows were stored after the first's), descending
    assert [(r["snapshot"], r["size"]) for r in data["rows"]] == [
        (other, 4194304), (snapshot_id, 4194304), (other, 2097152), (snapshot_id, 2097152),
    ]  # fmt: skip
    second = api_client.get(data["next"]).json()  # the next page keeps limit=4
    assert [r["size"] for r in second["rows"]] == [23040, 23040, 9984, 9984]
    last = api_client.get(second["next"]).json()
    assert [r["size"] for r in last["rows"]] == [4800, 4800] and last["next"] is None
    by_snapshot = api_client.get(url + "?sort=snapshot&dir=asc&limit=100").json()["rows"]
    assert [r["snapshot"] for r in by_snapshot] == [snapshot_id] * 5 + [other] * 5
    page = member_client.get(
        f"/apps/{snapshot.app_id}/builds/{snapshot.build_id}/allocations/"
    ).content.decode()
    assert "each with its snapshot" in page and page.count('<tr tabindex="0"') == 10


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # by the responsible caller's frame (symbol, then image), any case: main (the VM
        # row's: UIApplicationMain is UIKitCore's), -[ChatViewController …], -[MessageCell …];
        # ties by row id, descending
        ("?sort=caller&dir=asc&lifespan=persistent", [BY_SIZE[4], BY_SIZE[3], BY_SIZE[0]]),
        ("?sort=caller&dir=desc&lifespan=persistent", [BY_SIZE[0], BY_SIZE[3], BY_SIZE[4]]),
        # a caller's symbol: MessageCell's stack, whatever its category
        ("?q=initWithStyle", [BY_SIZE[2], BY_SIZE[3]]),
        ("?q=viewdidload", [BY_SIZE[4]]),
        # main is the VM row's caller (its stack's inner frame is UIKitCore's), and it is on
        # every other stack too, but not as their caller
        ("?q=main", [BY_SIZE[0], BY_SIZE[1]]),
        # UIKitCore is a system image: never a responsible library
        ("?q=uikit", []),
        # LIKE's own characters are text
        ("?q=%25", []),
        ("?q=_", []),
    ],
)
def test_callers_sort_and_search(api_client, snapshot_id, query, expected):
    response = api(api_client, snapshot_id, query)
    assert response.status_code == 200, response.content
    assert entries(response.json()) == expected


def test_caller_pages_follow_their_cursor(api_client, snapshot_id):
    first = api(api_client, snapshot_id, "?sort=caller&dir=asc&limit=2").json()
    second = api_client.get(first["next"]).json()
    third = api_client.get(second["next"]).json()
    assert third["next"] is None
    callers = [r["responsible_caller"] for r in first["rows"] + second["rows"] + third["rows"]]
    assert callers == ["-[ChatViewController viewDidLoad]", "-[MessageCell initWithStyle:]",
                       "-[MessageCell initWithStyle:]", "main", "main"]  # fmt: skip


def test_after_and_before_together_contradict_each_other(api_client, snapshot_id):
    """Each cursor is well-formed alone (the schema cannot say "one of them"): 409 at `before`."""
    cursor = api(api_client, snapshot_id, "?limit=1").json()["next"].split("after=")[1]
    response = api(api_client, snapshot_id, f"?after={cursor}&before={cursor}")
    assert response.status_code == 409 and response.json()["path"] == "before"


def test_a_cursor_of_the_schemas_shape_but_no_place_is_404_at_its_parameter(
    api_client, snapshot_id
):
    """Leading zeros keep a key within 64 bits but make the cursor longer than any list's."""
    response = api(api_client, snapshot_id, "?after=" + "0" * 60 + "1.1.1")
    assert response.status_code == 404 and response.json()["path"] == "after"


def test_a_cursor_between_entries_goes_on_from_its_place(api_client, snapshot_id):
    """A cursor no entry has (size 10,000, row 0): the entries below it by size, 9,984 and
    4,800; above it (ascending), 23,040 and the VM ones."""
    below = api(api_client, snapshot_id, "?after=10000.0.1").json()
    assert entries(below) == BY_SIZE[3:]
    above = api(api_client, snapshot_id, "?dir=asc&after=10000.0.1").json()
    assert entries(above) == BY_SIZE[:3][::-1]
    assert entries(api(api_client, snapshot_id, "?before=10000.0.1&limit=1").json()) == [BY_SIZE[2]]
