"""Storing and re-clustering in the database: deterministic, bulk, and regressions."""

from __future__ import annotations

import random

import pytest

from memdash.cycles.models import CanonicalCycle, Cluster
from memdash.cycles.writes import recluster_app, set_system_prefixes
from memdash.triage.models import Status, TriageEvent
from tests.cycles.helpers import builds, loop, store

pytestmark = pytest.mark.django_db

BLOCK = ("__NSMallocBlock__", ("_onUpdate",))


def current_clusters(app) -> dict[tuple, tuple]:
    """key -> (occurrences, devices, builds, distinct loops) of the current clusters."""
    return {
        (c.system, *c.key): (c.occurrences, c.devices, c.builds, c.cycles)
        for c in Cluster.objects.filter(app=app, is_current=True)
    }


def test_a_shorter_loop_arriving_later_takes_the_longer_ones(app):
    b1, b2 = builds(app, 2)
    store(app, b1, [loop("A", "B", "C", "D"), loop("A", "B", "C", "E")])
    # Alone, each long loop is its own cluster.
    assert set(current_clusters(app)) == {(False, "A", "B", "C", "D"), (False, "A", "B", "C", "E")}
    old = Cluster.objects.get(key=["A", "B", "C", "D"])
    store(app, b2, [loop("A", "B")], device_key="D-2")
    # A-B is in both: one cluster with 3 occurrences, 2 devices, 2 builds, 3 distinct loops.
    assert current_clusters(app) == {(False, "A", "B"): (3, 2, 2, 3)}
    old.refresh_from_db()
    ab = Cluster.objects.get(key=["A", "B"])
    assert not old.is_current and old.merged_into == ab
    assert (ab.first_seen_build, ab.last_seen_build) == (b1, b2)


def test_upload_order_does_not_change_the_clusters(app, django_user_model):
    b1, b2, b3 = builds(app, 3)
    uploads = [
        (b1, [loop("A", "B", "C"), loop("C", "D")], "D-1"),
        (b2, [loop("A", "C"), loop("B", "D", "E")], "D-2"),
        (b3, [loop("D", "E"), loop("A", "B")], "D-3"),
        (b1, [loop("A", "E", "D"), (("UIView", ("_v",)), ("UIWindow", ("_w",)))], "D-4"),
    ]
    expected = None
    for seed in range(4):
        order = uploads[:]
        random.Random(seed).shuffle(order)
        for build, cycles, device in order:
            store(app, build, cycles, device_key=device)
        got = current_clusters(app)
        # The counts kept up to date upload by upload are those of a full recount.
        recluster_app(app)
        assert current_clusters(app) == got
        memberships = sorted(
            (tuple(loop.key), tuple(loop.cluster.key))
            # The clusters read apart (not outer-joined by their id): Citus refuses an outer
            # join of two distributed tables that does not name the app on both sides.
            for loop in CanonicalCycle.objects.filter(app=app).prefetch_related("cluster")
        )
        if expected is None:
            expected = (got, memberships)
        assert (got, memberships) == expected
        Cluster.objects.all().delete()
        CanonicalCycle.objects.all().delete()
    got, _ = expected
    # Worked by hand: A-B-C contains A-B and A-C (len 2, tie -> A-B); A-B, A-C are their own;
    # C-D is its own; B-D-E and A-E-D (= A,E,D: D then E cyclically) contain D-E.
    assert got == {
        (False, "A", "B"): (2, 2, 2, 2),  # A-B-C (b1, D-1) and A-B (b3, D-3)
        (False, "A", "C"): (1, 1, 1, 1),
        (False, "C", "D"): (1, 1, 1, 1),
        (False, "D", "E"): (3, 3, 3, 3),  # B-D-E (b2), D-E (b3), A-E-D (b1)
        (True, "UIView", "UIWindow"): (1, 1, 1, 1),
    }


def test_recluster_is_idempotent_and_moves_nothing(app):
    (b1,) = builds(app, 1)
    store(app, b1, [loop("A", "B"), loop("A", "B", "C")])
    before = current_clusters(app)
    result = recluster_app(app)
    assert result.loops_moved == 0 and result.created == []
    assert current_clusters(app) == before


def test_prefix_list_change_reclusters(app):
    (b1,) = builds(app, 1)
    store(app, b1, [loop("MDCache", "Owner"), loop("MDStore", "Owner")])
    assert set(current_clusters(app)) == {(False, "MDCache", "Owner"), (False, "MDStore", "Owner")}
    # With MD as a system prefix both loops' key is just Owner: one cluster.
    set_system_prefixes(app, ["NS", "UI", "MD"])
    assert current_clusters(app) == {(False, "Owner"): (2, 1, 1, 2)}
    set_system_prefixes(app, [])  # back to the defaults: the old clusters are current again
    assert set(current_clusters(app)) == {(False, "MDCache", "Owner"), (False, "MDStore", "Owner")}


def test_dropped_cycles_are_counted_on_the_report(app):
    (b1,) = builds(app, 1)
    report = store(app, b1, [loop("A", "B")], dropped=2)
    assert (report.cycles, report.dropped) == (1, 2)


def test_fixed_in_build_3_seen_in_build_4_is_reopened_as_a_regression(app, member):
    b1, b2, b3, b4, b5 = builds(app, 5)
    chat = (("ChatViewController", ()), ("ChatDataSource", ("_dataSource",)), BLOCK)
    store(app, b1, [chat])
    store(app, b2, [chat])
    cluster = Cluster.objects.get(key=["ChatDataSource", "ChatViewController"])
    cluster.change_triage(member, status=Status.FIXED, fixed_in_build=b3, assignee=member)

    # Old builds still in use report it: not a regression (2 is not later than 3).
    store(app, b2, [chat], device_key="D-2")
    cluster.refresh_from_db()
    assert cluster.status == Status.FIXED and not cluster.regression

    store(app, b4, [chat], device_key="D-3")
    cluster.refresh_from_db()
    assert cluster.status == Status.OPEN
    assert cluster.regression
    assert cluster.last_seen_build == b4 and cluster.first_seen_build == b1
    assert cluster.assignee == member  # the owner stays
    event = TriageEvent.objects.filter(kind=TriageEvent.REGRESSION).get()
    assert event.actor is None and event.item == cluster
    # Fixing it again (in a build without it: 8.0.4 has it) clears the flag.
    cluster.change_triage(member, status=Status.FIXED, fixed_in_build=b5)
    cluster.refresh_from_db()
    assert cluster.status == Status.FIXED and not cluster.regression


def test_recluster_command_and_outdated_algorithm(app):
    from io import StringIO

    from django.core.management import call_command

    b1, b2 = builds(app, 2)
    store(app, b1, [loop("A", "B"), loop("A", "B", "C")])
    # Clusters from an older algorithm are re-clustered in full by the next upload.
    Cluster.objects.update(algorithm_version="cycles-old")
    store(app, b2, [loop("C", "D")])
    assert set(
        Cluster.objects.filter(is_current=True).values_list("algorithm_version", flat=True)
    ) == {"cycles-2026.11"}
    out = StringIO()
    call_command("recluster_cycles", app=app.pk, stdout=out)
    assert out.getvalue() == "com.example.chat: 2 clusters, 0 cycles moved\n"
