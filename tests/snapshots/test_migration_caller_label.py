"""Migration 0002 moves the responsible caller from a frame reference to its label: a
database upgraded from 0001 shows the same callers as one that ingested after it."""

import pytest

from tests.migrations import migrate

pytestmark = pytest.mark.slow  # migrations back and forth

BEFORE = [("snapshots", "0001_initial"), ("core", "0001_initial")]  # core as it was then
AFTER = [("snapshots", "0002_category_total_caller_label")]


@pytest.mark.django_db(transaction=True)
def test_labels_are_filled_from_the_frames(back_to_latest):
    old = migrate(BEFORE)
    app = old.get_model("core", "App").objects.create(bundle_id="com.example.mig", platform="ios")
    build = old.get_model("core", "Build").objects.create(app=app, version="1.0")
    snapshot = old.get_model("snapshots", "Snapshot").objects.create(
        app=app, build=build, captured_at="2026-01-01T00:00:00Z"
    )
    frame = old.get_model("snapshots", "Frame")
    category = old.get_model("snapshots", "Category")
    total = old.get_model("snapshots", "CategoryTotal")
    symbolised = frame.objects.create(id=11, app_id=app.pk, symbol="-[Cell init]")
    in_image = frame.objects.create(id=-12, app_id=app.pk, image="Chat", offset=0x5A31C8)
    bare = frame.objects.create(id=13, app_id=app.pk, address=0xDEAD)
    expected = {}
    for name, caller, label in [
        ("A", symbolised, "-[Cell init]"),
        ("B", in_image, "Chat + 0x5a31c8"),
        ("C", bare, "0xdead"),
        ("D", None, ""),
    ]:
        cat = category.objects.create(app=app, name=name, kind="heap")
        total.objects.create(
            snapshot=snapshot,
            category=cat,
            responsible_frame=caller,
            persistent=1,
            persistent_bytes=16,
            transient=0,
            transient_bytes=0,
        )
        expected[name] = label

    new = migrate(AFTER)

    rows = new.get_model("snapshots", "CategoryTotal").objects.values_list(
        "category__name", "responsible_caller"
    )
    assert dict(rows) == expected
