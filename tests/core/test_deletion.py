"""Deleting a snapshot, a build or an app through the services leaves no row behind that refers
to what was deleted, in any table of memdash, including the large ones that carry no database
constraint (snapshot rows, frames, stack nodes, FOOM runs), and deletes those in bulk.

The data is real uploads of every kind: the spec's own snapshot and sessions examples, the retain
cycle examples, the leak reports and the detector's printed cycles of tests/data."""

from __future__ import annotations

import copy
import io
from collections import Counter
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection, models
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from memdash.allocations.models import (
    AllocationRow,
    BuildCategoryTotal,
    CallTreeNode,
    Category,
    CategoryTotal,
    Frame,
    GenerationCategoryTotal,
    ListEntry,
    ListOrderChunk,
    Snapshot,
    StackNode,
)
from memdash.allocations.writes.snapshots import delete_snapshot
from memdash.churn.models import ScenarioFunction
from memdash.core.models import App, Build, Device
from memdash.core.writes import apps as core_services
from memdash.core.writes.apps import delete_app, delete_build
from memdash.cycles.models import RetainCycle
from memdash.foom.models import Session
from memdash.ingest.models import Upload
from memdash.leaks.models import LeakRecord
from memdash.triage.models import TriageEvent
from tests.samples import (
    SESSIONS_SPEC_EXAMPLE,
    events_example,
    retain_cycles_example,
    spec_example,
)

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[1] / "data"
OLD, NEW = ("8.0.51", "2741"), ("8.0.52", "2742")  # OLD is the spec examples' own build
OTHER_APP = "com.example.other"

# Integer columns that refer to rows of another table without being a ForeignKey.
INTEGER_REFERENCES = {
    (AllocationRow, "category_id"): Category,
    (AllocationRow, "stack_id"): StackNode,
    (CallTreeNode, "node_id"): StackNode,
    (CallTreeNode, "parent_id"): StackNode,
    (CallTreeNode, "frame_id"): Frame,
    (StackNode, "parent_id"): StackNode,
    (StackNode, "frame_id"): Frame,
}
# Read only in bulk when an app or a build is deleted: a SELECT of them would be the ORM
# collecting rows one by one.
LARGE_TABLES = [
    AllocationRow, CallTreeNode, CategoryTotal, GenerationCategoryTotal, Frame, StackNode,
    Session, LeakRecord, RetainCycle, ScenarioFunction,
]  # fmt: skip


def memdash_models() -> list[type[models.Model]]:
    return [
        model
        for config in apps.get_app_configs()
        if config.name.startswith("memdash.")
        for model in config.get_models()
    ]


def table_counts() -> Counter:
    return Counter({model._meta.label: model.objects.count() for model in memdash_models()})


def orphans() -> list[str]:
    """Every reference in every memdash table to a row that does not exist: foreign keys (with
    or without a database constraint), the integer references above and triage histories."""
    found = []
    for model in memdash_models():
        for field in model._meta.concrete_fields:
            target = field.related_model if field.is_relation else None
            target = INTEGER_REFERENCES.get((model, field.attname), target)
            if target is None:
                continue
            existing = target._base_manager.values("pk")
            rows = model._base_manager.exclude(**{f"{field.attname}__isnull": True}).exclude(
                **{f"{field.attname}__in": existing}
            )
            if count := rows.count():
                found.append(f"{model._meta.label}.{field.attname}: {count}")
    for event in TriageEvent.objects.select_related("content_type"):
        if not event.content_type.model_class()._base_manager.filter(pk=event.object_id).exists():
            found.append(f"triage.TriageEvent {event.pk} of a deleted item")
    return found


def references_to(deleted: dict[str, set[int]]) -> list[str]:
    """Rows whose `app_id`, `build_id`, `device_id` or `snapshot_id` column names a deleted id,
    in every memdash table, whether or not the column is a ForeignKey."""
    found = []
    for model in memdash_models():
        for field in model._meta.concrete_fields:
            ids = deleted.get(field.column)
            if not ids:
                continue
            if count := model._base_manager.filter(**{f"{field.attname}__in": ids}).count():
                found.append(f"{model._meta.label}.{field.column}: {count}")
    return found


def done(response) -> dict:
    body = response.json()
    assert response.status_code in (200, 202), body
    assert body["status"] == "done", body
    return body


def sessions_document(bundle: str) -> dict:
    """The spec's run on OLD, the next run of the same device on NEW (so each build's runs have
    neighbours in the other build), and a run of another device on NEW."""
    doc = copy.deepcopy(SESSIONS_SPEC_EXAMPLE)
    doc["app"]["id"] = bundle
    first = doc["sessions"][0]
    second = copy.deepcopy(first)
    second.update(
        id="6a1d4f2b-6e1c-4b6f-8e2f-3c9a7d8f0b21",
        build={"version": NEW[0], "number": NEW[1]},
        started_at="2026-11-20T11:00:00+00:00",
        last_seen_at="2026-11-20T11:05:00+00:00",
    )
    third = copy.deepcopy(second)
    third.update(id="7b2e5a3c-7f2d-4c70-9f30-4dab8e9a1c32", device={"id": "C3D4", "model": "x"})
    doc["sessions"] = [first, second, third]
    return doc


def churn_document(bundle: str, build: tuple[str, str]) -> dict:
    calls = [("malloc", 256), ("free", 256), ("calloc", 2)]
    return {
        "format": "memdash.churn",
        "version": 1,
        "app": {"id": bundle, "platform": "ios"},
        "build": {"version": build[0], "number": build[1]},
        "device": {"id": "ci-1", "model": "iPhone13,2"},
        "captured_at": "2026-11-20T10:00:00+00:00",
        "runs": [{"id": "r1", "scenarios": [{"name": "open", "elapsed_ms": 90.0, "calls": calls}]}],
    }


def load_app(upload, bundle: str, secret: str) -> None:
    """Two builds of every kind of data of one app, through the upload API."""
    app = {"id": bundle, "platform": "ios"}
    new = {"version": NEW[0], "number": NEW[1]}
    for doc in (
        spec_example(app=app),
        events_example(app=app),
        spec_example(app=app, build=new, device={"id": "C3D4", "model": "iPhone15,2"}),
        sessions_document(bundle),
        retain_cycles_example(app=app),
        churn_document(bundle, OLD),
        churn_document(bundle, NEW),
    ):
        done(upload(doc, secret=secret))
    text = [
        ("cycles/nslog_cycles.txt", NEW, "C3D4"),
        ("leaks/lsan_direct_leak.txt", OLD, "A1B2"),
        ("leaks/libmemunreachable_chrome.txt", NEW, "C3D4"),
    ]
    for name, (version, number), device in text:
        query = f"build_version={version}&build_number={number}&device_id={device}"
        raw = (DATA / name).read_bytes()
        done(upload(raw, secret=secret, content_type="text/plain", query=query))
    call_command("make_allocation_lists", stdout=io.StringIO())  # as the task queue does


@pytest.fixture
def other_app(upload) -> App:
    """Another app with the same data: what must survive every deletion of the first."""
    other = core_services.get_or_create_app(OTHER_APP, "ios", "Other")
    load_app(upload, OTHER_APP, core_services.create_ingest_key(other)[1])
    return other


@pytest.fixture
def loaded(app, ingest_secret, upload, other_app) -> App:
    load_app(upload, app.bundle_id, ingest_secret)
    assert orphans() == []
    return app


def build_of(app: App, version: tuple[str, str]) -> Build:
    return Build.objects.get(app=app, version=version[0], number=version[1])


def assert_deleted_in_bulk(queries: CaptureQueriesContext) -> None:
    tables = [model._meta.db_table for model in LARGE_TABLES]
    read = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith("SELECT")
        and any(f'FROM "{table}"' in q["sql"] for table in tables)
    ]
    assert read == []


def test_every_kind_of_data_is_loaded(loaded, other_app):
    """The deletion tests below are only as good as the data: every large table has rows of
    both builds of both apps."""
    for app in (loaded, other_app):
        for version in (OLD, NEW):
            build = build_of(app, version)
            snapshots = Snapshot.objects.filter(build=build).values("pk")
            for model in (AllocationRow, CallTreeNode, CategoryTotal, GenerationCategoryTotal,
                          ListEntry, ListOrderChunk):  # fmt: skip
                assert model.objects.filter(snapshot_id__in=snapshots).exists(), model
            for model in (Session, LeakRecord, RetainCycle, BuildCategoryTotal):
                assert model.objects.filter(build=build).exists(), model
            assert ScenarioFunction.objects.filter(scenario_run__build=build).exists()
        assert Frame.objects.filter(app=app).exists() and StackNode.objects.filter(app=app).exists()


def build_totals(build: Build) -> dict[str, tuple[int, int, int, int, int]]:
    return {
        t.category.name: (t.persistent, t.persistent_bytes, t.transient, t.transient_bytes,
                          t.snapshots)
        for t in BuildCategoryTotal.objects.filter(build=build).select_related("category")
    }  # fmt: skip


def test_deleting_a_snapshot(loaded):
    build = build_of(loaded, OLD)
    spec, events = Snapshot.objects.filter(build=build).order_by("pk")
    assert spec.source_format == events.source_format == "memdash.snapshot"
    totals = build_totals(build)
    # The spec example: MessageCell p 12 + 1, 9216 + 768 bytes, t 30, 23040 bytes; 100
    # persistent 48-byte blocks. The events example: two 48-byte blocks freed or moved
    # (transient, 96 bytes), no MessageCell.
    assert totals["MessageCell"] == (13, 9984, 30, 23040, 1)
    assert totals["Malloc 48 Bytes"] == (100, 4800, 2, 96, 2)
    before = table_counts()
    own = {model: model.objects.filter(snapshot_id=spec.pk).count() for model in
           (AllocationRow, CallTreeNode, CategoryTotal, GenerationCategoryTotal)}  # fmt: skip

    delete_snapshot(spec)

    assert references_to({"snapshot_id": {spec.pk}}) == []
    assert orphans() == []
    after = table_counts()
    for model, count in own.items():
        assert after[model._meta.label] == before[model._meta.label] - count
    assert after["allocations.Snapshot"] == before["allocations.Snapshot"] - 1
    # The build's totals are now the other snapshot's alone: MessageCell, in the deleted
    # snapshot only, has no row at zero.
    remaining = {
        t.category.name: (t.persistent, t.persistent_bytes, t.transient, t.transient_bytes, 1)
        for t in CategoryTotal.objects.filter(snapshot_id=events.pk).select_related("category")
    }
    totals = build_totals(build)
    assert totals == remaining
    assert "MessageCell" not in totals
    assert totals["Malloc 48 Bytes"] == (0, 0, 2, 96, 1)
    # Frames and stack nodes belong to the app: the other snapshots use them.
    assert after["allocations.Frame"] == before["allocations.Frame"]
    assert after["allocations.StackNode"] == before["allocations.StackNode"]


def test_deleting_the_last_snapshot_of_a_build_leaves_no_totals(loaded):
    build = build_of(loaded, NEW)
    (only,) = Snapshot.objects.filter(build=build)
    delete_snapshot(only)
    assert not BuildCategoryTotal.objects.filter(build=build).exists()
    assert orphans() == []


def test_deleting_a_snapshot_through_the_orm_is_as_clean(loaded):
    """A queryset delete (the admin, a shell) goes through the same receiver."""
    build = build_of(loaded, OLD)
    ids = set(Snapshot.objects.filter(build=build).values_list("pk", flat=True))
    Snapshot.objects.filter(build=build).delete()
    assert references_to({"snapshot_id": ids}) == []
    assert orphans() == []
    assert not BuildCategoryTotal.objects.filter(build=build).exists()


def surviving_rows(build: Build) -> dict[str, int]:
    """Rows of the other build, by table: what deleting one build must not touch."""
    snapshots = Snapshot.objects.filter(build=build).values("pk")
    counts = {}
    for model in memdash_models():
        columns = {field.column: field.attname for field in model._meta.concrete_fields}
        if "build_id" in columns:
            counts[model._meta.label] = model.objects.filter(build_id=build.pk).count()
        elif "snapshot_id" in columns:
            counts[model._meta.label] = model.objects.filter(snapshot_id__in=snapshots).count()
    return counts


def test_deleting_a_build(loaded):
    old, new = build_of(loaded, OLD), build_of(loaded, NEW)
    snapshots = set(Snapshot.objects.filter(build=old).values_list("pk", flat=True))
    kept = surviving_rows(new)
    frames, nodes = Frame.objects.count(), StackNode.objects.count()
    new_totals = BuildCategoryTotal.objects.filter(build=new).aggregate(Sum("persistent"))

    with CaptureQueriesContext(connection) as queries:
        delete_build(old)

    assert_deleted_in_bulk(queries)
    assert references_to({"build_id": {old.pk}, "snapshot_id": snapshots}) == []
    assert orphans() == []
    assert surviving_rows(new) == kept
    assert BuildCategoryTotal.objects.filter(build=new).aggregate(Sum("persistent")) == new_totals
    # Frames and stack nodes are the app's, shared with the other build: they stay.
    assert (Frame.objects.count(), StackNode.objects.count()) == (frames, nodes)
    assert Build.objects.filter(app=loaded).get() == new


def test_deleting_an_app(app, ingest_secret, upload, other_app):
    """The other app's rows are exactly what they were before this app was loaded."""
    only_other = table_counts()
    load_app(upload, app.bundle_id, ingest_secret)
    deleted = {
        "app_id": {app.pk},
        "build_id": set(Build.objects.filter(app=app).values_list("pk", flat=True)),
        "device_id": set(Device.objects.filter(app=app).values_list("pk", flat=True)),
        "snapshot_id": set(Snapshot.objects.filter(app=app).values_list("pk", flat=True)),
    }
    assert all(deleted.values())
    uploads = Upload.objects.filter(app=app).count()
    assert uploads == 10

    with CaptureQueriesContext(connection) as queries:
        delete_app(app)

    assert_deleted_in_bulk(queries)
    assert references_to(deleted) == []
    assert orphans() == []
    # This app and its ingest key existed already then (the fixtures make them).
    assert table_counts() == only_other - Counter({"core.App": 1, "core.IngestKey": 1})
    assert not App.objects.filter(pk=app.pk).exists()


def test_deleting_an_app_through_the_orm_is_as_clean(loaded, other_app):
    app_id = loaded.pk
    App.objects.filter(pk=app_id).delete()
    assert references_to({"app_id": {app_id}}) == []
    assert orphans() == []
    assert Frame.objects.filter(app=other_app).exists()
