"""A build's statistics tables made ahead for every filter (`logic.build_views`, `BuildView`):
five snapshots of two device models, two OS versions and two triggers, whose medians per
filter are worked out by hand below; the page and the API read the stored table, and one made
from other snapshots is shown (saying so) while it is made again."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime

import numpy as np
import orjson
import pytest
from django.core.cache import cache
from django_tasks_db.models import DBTaskResult

from memdash.allocations.logic.build_views import BuildColumns, build_table, filter_keys
from memdash.allocations.models import BuildView, CategoryTotal, Snapshot
from memdash.allocations.tasks import refresh_build_tables
from memdash.allocations.writes import build_views as build_views_writes
from memdash.allocations.writes.build_views import refresh_build_views
from memdash.allocations.writes.snapshots import store_snapshot_document
from memdash.core.models import Build
from memdash.core.writes.uploads import UploadMeta
from tests.compare.helpers import document, row, store

OLD, NEW = "iPhone14,5", "iPhone15,2"
# (model, OS, trigger, rows): Cache on stack 2 (-[Cache store]), Cell and VM: Pool on stack 3
SNAPSHOTS = [
    (OLD, "iOS 17.4", "periodic", [row("Cache", 2, None, 1, 100), row("Cell", 3, None, 2, 64)]),
    (OLD, "iOS 17.5", "periodic", [row("Cache", 2, None, 2, 300)]),
    (NEW, "iOS 17.4", "foom", [row("Cache", 2, None, 3, 500), row("Cell", 3, None, 1, 32, 1, 16)]),
    (NEW, "iOS 17.5", "periodic", [row("Cell", 3, None, 4, 128)]),
    (NEW, "iOS 17.4", "periodic",
     [row("Cache", 2, None, 5, 900), row("VM: Pool", 3, None, 1, 4096)]),
]  # fmt: skip


def by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["category"]: r for r in rows}


def columns() -> tuple[BuildColumns, list[tuple[str, str, str]]]:
    """The five snapshots' totals as columns, written out by hand (one entry per category a
    snapshot has); categories 0 Cache, 1 Cell, 2 VM: Pool; callers 0 -[Cache store],
    1 -[Cell init]."""
    entries = [  # (snapshot, category, p, pb, t, tb, caller)
        (0, 0, 1, 100, 0, 0, 0), (0, 1, 2, 64, 0, 0, 1), (1, 0, 2, 300, 0, 0, 0),
        (2, 0, 3, 500, 0, 0, 0), (2, 1, 1, 32, 1, 16, 1), (3, 1, 4, 128, 0, 0, 1),
        (4, 0, 5, 900, 0, 0, 0), (4, 2, 1, 4096, 0, 0, 1),
    ]  # fmt: skip
    table = np.array(entries, dtype=np.int64)
    cols = BuildColumns(
        snapshots=5, snapshot=table[:, 0], category=table[:, 1], counts=table[:, 2:6],
        caller=table[:, 6], names=["Cache", "Cell", "VM: Pool"], kinds=["heap", "heap", "vm"],
        callers=[("-[Cache store]", 11), ("-[Cell init]", 12)],
    )  # fmt: skip
    return cols, [(trigger, model, os) for model, os, trigger, _ in SNAPSHOTS]


def test_tables_per_filter_by_hand():
    cols, attributes = columns()
    keys = filter_keys(attributes)
    assert sorted(keys) == [
        ("", ""), ("model", OLD), ("model", NEW), ("os", "iOS 17.4"), ("os", "iOS 17.5"),
        ("trigger", "foom"), ("trigger", "periodic"),
    ]  # fmt: skip
    assert keys[("model", NEW)].tolist() == [2, 3, 4]

    whole = build_table(cols, keys[("", "")], "all")
    cache = by_name(whole["rows"])["Cache"]
    # persistent bytes 100, 300, 500, 0, 900: sorted 0 100 300 500 900 -> median 300, mean 360
    assert (cache["median"]["persistent_bytes"], cache["mean"]["persistent_bytes"]) == (300, 360)
    assert (cache["persistent_bytes"], cache["snapshots"]) == (1800, 4)
    assert cache["responsible_caller"] == "-[Cache store]" and cache["responsible_frame_id"] == 11
    cell = by_name(whole["rows"])["Cell"]
    # persistent bytes 64, 0, 32, 128, 0 -> 32; total bytes 64, 0, 48, 128, 0 -> 48
    assert (cell["median"]["persistent_bytes"], cell["median"]["total_bytes"]) == (32, 48)
    assert cell["median"]["total"] == 2  # counts 2, 0, 2, 4, 0
    # largest median total bytes first: Cache 300, Cell 48, VM: Pool 0 (mean 4096 / 5)
    assert [r["category"] for r in whole["rows"]] == ["Cache", "Cell", "VM: Pool"]

    new = build_table(cols, keys[("model", NEW)], "all")
    assert new["snapshots"] == 3
    rows = by_name(new["rows"])
    # Cache 500, 0, 900 -> median 500, mean 1400 / 3, in 2 snapshots
    assert rows["Cache"]["median"]["persistent_bytes"] == 500
    assert rows["Cache"]["mean"]["persistent_bytes"] == pytest.approx(1400 / 3)
    assert rows["Cache"]["snapshots"] == 2
    # Cell transient bytes 16, 0, 0 -> median 0, mean 16 / 3; total bytes 48, 128, 0 -> 48
    assert rows["Cell"]["median"]["transient_bytes"] == 0
    assert rows["Cell"]["mean"]["transient_bytes"] == pytest.approx(16 / 3)
    assert rows["Cell"]["median"]["total_bytes"] == 48
    # VM: Pool 0, 0, 4096 -> median 0, in one snapshot
    assert (rows["VM: Pool"]["median"]["persistent_bytes"], rows["VM: Pool"]["snapshots"]) == (
        0, 1,
    )  # fmt: skip
    # summary per snapshot: heap 500+48 = 548, 128, 900; VM 0, 0, 4096; all 548, 128, 4996
    everything, heap, vm = new["summary"]
    assert everything["median"]["total_bytes"] == 548
    assert everything["mean"]["total_bytes"] == pytest.approx((548 + 128 + 4996) / 3)
    assert heap["median"]["total_bytes"] == 548
    assert (vm["median"]["total_bytes"], vm["mean"]["total_bytes"]) == (0, pytest.approx(4096 / 3))

    old = by_name(build_table(cols, keys[("model", OLD)], "all")["rows"])
    # two snapshots: Cache 100, 300 -> median 200 (between them); Cell 64, 0 -> 32
    assert old["Cache"]["median"]["persistent_bytes"] == 200
    assert old["Cell"]["median"]["persistent_bytes"] == 32
    assert "VM: Pool" not in old

    os_174 = by_name(build_table(cols, keys[("os", "iOS 17.4")], "all")["rows"])
    # snapshots 1, 3, 5: Cache 100, 500, 900 -> 500; Cell total bytes 64, 48, 0 -> 48
    assert os_174["Cache"]["median"]["persistent_bytes"] == 500
    assert os_174["Cell"]["median"]["total_bytes"] == 48

    # only transient allocations: Cell in one snapshot of five (1, 16); nothing else is there
    transient = build_table(cols, keys[("", "")], "transient")
    assert [r["category"] for r in transient["rows"]] == ["Cell"]
    cell = transient["rows"][0]
    assert (cell["median"]["transient_bytes"], cell["mean"]["transient_bytes"]) == (0, 16 / 5)
    assert (cell["persistent_bytes"], cell["median"]["total_bytes"], cell["snapshots"]) == (0, 0, 1)
    # only persistent: Cell's total bytes are its persistent bytes 64, 0, 32, 128, 0 -> 32
    persistent = by_name(build_table(cols, keys[("", "")], "persistent")["rows"])
    assert persistent["Cell"]["median"]["total_bytes"] == 32
    assert persistent["Cell"]["transient_bytes"] == 0


def test_responsible_caller_most_snapshots_then_bytes_then_name():
    # one category in three snapshots: caller b in two (10 + 10 bytes), a in one (500 bytes)
    cols = BuildColumns(
        snapshots=3, snapshot=np.array([0, 1, 2]), category=np.array([0, 0, 0]),
        counts=np.array([[1, 10, 0, 0], [1, 10, 0, 0], [1, 500, 0, 0]]),
        caller=np.array([1, 1, 0]), names=["C"], kinds=["heap"],
        callers=[("a", None), ("b", None)],
    )  # fmt: skip
    assert build_table(cols, np.arange(3), "all")["rows"][0]["responsible_caller"] == "b"
    # one snapshot each: most bytes wins (a: 500); the same bytes: the first by name (a)
    assert build_table(cols, np.array([1, 2]), "all")["rows"][0]["responsible_caller"] == "a"
    cols.counts = np.array([[1, 10, 0, 0], [1, 10, 0, 0], [1, 10, 0, 0]])
    assert build_table(cols, np.array([1, 2]), "all")["rows"][0]["responsible_caller"] == "a"


def documents() -> list[dict]:
    return [
        document(rows, device=f"D-{i}", model=model, os=os, trigger=trigger, generations=[],
                 captured_at=f"2026-11-2{i}T10:00:00Z")
        for i, (model, os, trigger, rows) in enumerate(SNAPSHOTS)
    ]  # fmt: skip


@pytest.fixture
def build(db, upload, app, django_capture_on_commit_callbacks) -> Build:
    cache.clear()
    for doc in documents():
        # the task its storing queues once committed (the embedded default runs it at once)
        with django_capture_on_commit_callbacks(execute=True):
            store(upload, doc)
    return Build.objects.get(version="1.0")


@pytest.mark.django_db
def test_made_ahead_and_read_by_the_api(api_client, app, build):
    # made by the task each stored snapshot queues: 7 filters (the build, 2 triggers, 2 models,
    # 2 OS versions) x 3 lifespans
    assert BuildView.objects.filter(build=build).count() == 21
    assert refresh_build_views(build) == 21
    # the page reads the tables made ahead, not the totals: without them, the same answer
    CategoryTotal.objects.filter(snapshot__build=build).delete()
    url = f"/api/v1/apps/{app.pk}/builds/{build.pk}/statistics"
    body = api_client.get(url, {"model": NEW}).json()
    assert (body["snapshots"], body["made_at"]) == (3, None)
    rows = by_name(body["rows"])
    assert rows["Cache"]["median"]["persistent_bytes"] == 500
    assert rows["Cache"]["responsible_caller"] == "-[Cache store]"
    assert rows["Cache"]["responsible_frame"]["symbolicated"] is True  # its frame, joined
    assert body["summary"][0]["median"]["total_bytes"] == 548
    # sorted by another column: by the median persistent count (Cell 1, 4, 0 -> 1; Cache
    # 3, 0, 5 -> 3; VM: Pool 0, 0, 1 -> 0)
    ordered = api_client.get(url, {"model": NEW, "sort": "persistent", "dir": "asc"}).json()
    assert [r["category"] for r in ordered["rows"]] == ["VM: Pool", "Cell", "Cache"]
    transient = api_client.get(url, {"lifespan": "transient"}).json()
    assert [r["category"] for r in transient["rows"]] == ["Cell"]


@pytest.mark.django_db
def test_two_filters_at_once_are_made_from_the_totals(api_client, app, build):
    url = f"/api/v1/apps/{app.pk}/builds/{build.pk}/statistics"
    body = api_client.get(url, {"model": NEW, "os": "iOS 17.4"}).json()
    # snapshots 3 and 5: Cache 500, 900 -> 700
    assert body["snapshots"] == 2
    assert by_name(body["rows"])["Cache"]["median"]["persistent_bytes"] == 700


@pytest.mark.django_db
def test_out_of_date_table_shown_while_made_again(settings, member_client, api_client, app, build):
    settings.MEMDASH_BUILD_TABLE_INLINE_SNAPSHOTS = 0  # every build is large here
    stored = BuildView.objects.get(build=build, filter="model", value=NEW, lifespan="all")
    # a deletion queues nothing: the next page finds the table out of date
    Snapshot.objects.filter(build=build, device_model=NEW, trigger="periodic", os="iOS 17.4").get(
    ).delete()  # fmt: skip
    url = f"/api/v1/apps/{app.pk}/builds/{build.pk}/statistics"
    body = api_client.get(url, {"model": NEW}).json()
    # the table made from three snapshots, said so (and queued again: the embedded default
    # makes it at once)
    assert body["snapshots"] == 3 and body["made_at"] == stored.made_at.isoformat()
    assert by_name(body["rows"])["Cache"]["median"]["persistent_bytes"] == 500
    again = api_client.get(url, {"model": NEW}).json()
    # snapshots 3 and 4 now: Cache 500, 0 -> 250
    assert (again["snapshots"], again["made_at"]) == (2, None)
    assert by_name(again["rows"])["Cache"]["median"]["persistent_bytes"] == 250

    Snapshot.objects.filter(build=build, device_model=NEW, trigger="foom").get().delete()
    page = member_client.get(f"/apps/{app.pk}/builds/{build.pk}/", {"model": NEW})
    html = page.content.decode()
    assert 'id="stale-table"' in html and "from 2 snapshots" in html
    assert page.context["chosen_count"] == 2


@pytest.mark.django_db
def test_a_burst_of_uploads_queues_one_deferred_making(
    settings, app, django_capture_on_commit_callbacks
):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    cache.clear()
    for doc in documents()[:3]:
        with django_capture_on_commit_callbacks(execute=True):  # as a worker stores it
            store_snapshot_document(doc, UploadMeta(app=app, received_at=datetime.now(UTC)))
    queued = DBTaskResult.objects.filter(task_path__endswith="refresh_build_tables")
    assert queued.count() == 1 and queued.get().run_after is not None  # later: the burst in it
    assert not BuildView.objects.exists()
    build = Build.objects.get(app=app)
    refresh_build_tables.call(build.pk)
    # whole build, 2 triggers, 2 models, 2 OS versions, x 3 lifespans
    assert BuildView.objects.filter(build=build).count() == 21
    cache.clear()


@pytest.mark.django_db
def test_filters_keeping_the_same_snapshots_store_the_same_table(
    upload, app, django_capture_on_commit_callbacks, monkeypatch
):
    """A build of one snapshot: its trigger, model and OS each keep that snapshot, so their
    tables are the whole build's (made once, stored under each: 4 filters x 3 lifespans)."""
    cache.clear()
    with django_capture_on_commit_callbacks(execute=True):
        store(upload, documents()[0])
    build = Build.objects.get(version="1.0")
    made = []
    monkeypatch.setattr(
        build_views_writes, "build_table", lambda *args: made.append(args) or build_table(*args)
    )
    assert refresh_build_views(build) == 12
    assert len(made) == 3  # one table a lifespan
    for lifespan in ("all", "persistent", "transient"):
        views = BuildView.objects.filter(build=build, lifespan=lifespan)
        assert sorted(views.values_list("filter", "value")) == [
            ("", ""), ("model", OLD), ("os", "iOS 17.4"), ("trigger", "periodic")
        ]  # fmt: skip
        assert len({bytes(v.data) for v in views}) == 1
    whole = orjson.loads(zlib.decompress(BuildView.objects.get(
        build=build, filter="", lifespan="all").data))  # fmt: skip
    # the snapshot's own figures: Cache 1 allocation of 100 bytes, Cell 2 of 64
    cache_row = by_name(whole["rows"])["Cache"]
    assert (whole["snapshots"], cache_row["median"]["persistent_bytes"]) == (1, 100)
    assert by_name(whole["rows"])["Cell"]["median"]["persistent_bytes"] == 64
