"""The loop drawing's geometry, and the demo data's story."""

from __future__ import annotations

import random

import pytest

from memdash.core.demo import DemoContext, demo_user
from memdash.core.writes import apps as core_services
from memdash.cycles import demo
from memdash.cycles.logic.drawing import draw_loop
from memdash.cycles.models import Cluster
from memdash.triage.models import Status


def test_loop_drawing_has_one_box_and_one_labelled_arrow_per_object():
    cycle = [("A", ()), ("__NSMallocBlock__", ("_onUpdate",)), ("C", ("_a", "_b"))]
    drawing = draw_loop(cycle, lambda cls: cls.startswith("__NS"))
    assert [b.label for b in drawing.boxes] == ["A", "__NSMallocBlock__", "C"]
    assert [b.system for b in drawing.boxes] == [False, True, False]
    # The arrow into each object carries its via; an empty via is shown as unnamed.
    assert [a.label for a in drawing.arrows] == ["(unnamed)", "_onUpdate", "_a._b"]
    for box in drawing.boxes:  # everything inside the canvas
        assert box.x >= 0 and box.x + box.width <= drawing.width
        assert box.y >= 0 and box.y + box.height <= drawing.height


def test_self_reference_and_pairs():
    (arrow,) = draw_loop([("Node", ("_next",))], lambda cls: False).arrows
    assert arrow.label == "_next" and " C " in arrow.path  # a curve back into the box
    pair = draw_loop([("A", ("_a",)), ("B", ("_b",))], lambda cls: False)
    first, second = pair.arrows
    assert " Q " in first.path and " Q " in second.path  # two curves, one each way
    assert first.label_y != second.label_y


@pytest.mark.django_db
def test_demo_has_clusters_across_builds_and_one_regression():
    app = core_services.get_or_create_app("com.example.chat", "ios", "Chat")
    user = demo_user()
    core_services.add_member(app, user, "admin")
    builds = [core_services.get_or_create_build(app, f"8.0.{i}", str(100 + i)) for i in range(1, 6)]
    devices = [core_services.get_or_create_device(app, f"D-{i}") for i in range(4)]
    ctx = DemoContext(app=app, builds=builds, devices=devices, user=user, rng=random.Random(4))
    demo.load(ctx)
    clusters = {tuple(c.key): c for c in Cluster.objects.filter(app=app, is_current=True)}
    assert len(clusters) == 5 and sum(c.system for c in clusters.values()) == 1
    chat = clusters[("ChatDataSource", "ChatViewController")]
    # Fixed in build 3 = builds[2], seen again in build 4: reopened and flagged.
    assert chat.fixed_in_build == builds[2]
    assert (chat.status, chat.regression) == (Status.OPEN, True)
    assert chat.cycles == 2  # the plain loop and the one through ChatInputBar
    settings_cluster = clusters[("SettingsObserver", "SettingsViewController")]
    assert (settings_cluster.status, settings_cluster.regression) == (Status.FIXED, False)
    assert all(c.builds >= 2 for c in clusters.values())
