"""Triage that cannot contradict the data: "fixed in" a build that still has occurrences of the
item is refused with the reason, for each kind of triaged item, unless overridden, and the
override stays in the history."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdash.core.models import Build
from memdash.core.writes import apps as core_services
from memdash.cycles.models import Cluster
from memdash.leaks.models import LeakGroup, LeakTraceCluster
from memdash.triage.models import ContradictedFix, Status, TriageError
from tests.cycles.helpers import builds, loop, store

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def cluster(app):
    b1, b2, _b3 = builds(app, 3)
    store(app, b1, [loop("A", "B")], device_key="D-1")
    store(app, b1, [loop("A", "B"), loop("A", "B", "C")], device_key="D-2")
    store(app, b2, [loop("C", "D")])  # another cluster's loop
    return Cluster.objects.get(key=["A", "B"])


def version(app, name: str) -> Build:
    return Build.objects.get(app=app, version=name)


def test_occurrences_of_a_cycle_cluster_per_build(app, cluster):
    # 8.0.1: A-B twice (two reports) and A-B-C once, all in the A-B cluster
    assert cluster.occurrences_in(version(app, "8.0.1")) == 3
    assert cluster.occurrences_in(version(app, "8.0.2")) == 0


def test_a_fix_in_a_build_with_occurrences_is_refused_and_changes_nothing(app, cluster, member):
    with pytest.raises(ContradictedFix) as caught:
        cluster.change_triage(member, status=Status.FIXED, fixed_in_build=version(app, "8.0.1"))
    assert isinstance(caught.value, TriageError) and caught.value.field == "fixed_in_build"
    assert caught.value.message.startswith("8.0.1 (101) still has 3 occurrences of this item")
    cluster.refresh_from_db()
    assert (cluster.status, cluster.fixed_in_build) == (Status.NEW, None)
    assert not cluster.triage_events.exists()
    # 8.0.2 has none: a fix there is what the data allows
    cluster.change_triage(member, status=Status.FIXED, fixed_in_build=version(app, "8.0.2"))
    assert cluster.fixed_in_build == version(app, "8.0.2")


def test_status_fixed_with_a_stored_build_that_has_occurrences_is_refused(app, cluster, member):
    cluster.change_triage(member, fixed_in_build=version(app, "8.0.3"))
    store(app, version(app, "8.0.3"), [loop("A", "B")])
    with pytest.raises(ContradictedFix):
        cluster.change_triage(member, status=Status.FIXED)
    # Changes that say nothing of the fix are not asked again.
    cluster.change_triage(member, notes="seen in 8.0.3 again", status=Status.OPEN)
    assert cluster.status == Status.OPEN


def test_an_override_is_recorded_in_the_history(app, cluster, member):
    event = cluster.change_triage(
        member, status=Status.FIXED, fixed_in_build=version(app, "8.0.1"), override=True
    )
    assert event is not None and event.changes == [
        {"field": "status", "from": "new", "to": "fixed"},
        {"field": "fixed_in_build", "from": None, "to": "8.0.1 (101)"},
        {"field": "override", "from": None, "to": "fixed despite 3 occurrences in 8.0.1 (101)"},
    ]
    # An override where the data agrees records nothing extra.
    event = cluster.change_triage(member, fixed_in_build=version(app, "8.0.2"), override=True)
    assert event is not None and [c["field"] for c in event.changes] == ["fixed_in_build"]


def test_leak_groups_count_their_records_per_build(upload, app, member):
    for build in ("1.0", "1.1"):
        sample = (DATA / "leaks" / "lsan_direct_leak.txt").read_bytes()
        query = f"build_version={build}&device_id=D-1"
        assert upload(sample, content_type="text/plain", query=query).status_code == 202
    upload(b"", content_type="text/plain", query="build_version=1.2&device_id=D-1")
    group = LeakGroup.objects.order_by("-occurrences", "id").first()
    assert group is not None
    # the same report twice: each build has the group's records once
    per_report = group.occurrences // 2
    assert per_report >= 1
    assert group.occurrences_in(version(app, "1.0")) == per_report
    with pytest.raises(ContradictedFix):
        group.change_triage(member, fixed_in_build=version(app, "1.1"))
    later = core_services.get_or_create_build(app, "1.2")
    group.change_triage(member, status=Status.FIXED, fixed_in_build=later)
    assert group.fixed_in_build == later


def test_leakcanary_clusters_count_their_analyses_per_build(upload, member, db):
    android = core_services.get_or_create_app("com.example.chat", "android", "Chat")
    core_services.add_member(android, member)
    secret = core_services.create_ingest_key(android)[1]
    body = (DATA / "leakcanary" / "MultiApplicationLeak.txt").read_bytes()
    for build in ("8.0.3", "8.0.4"):
        query = f"build_version={build}&build_number=1&device_id=A-1"
        response = upload(body, secret=secret, content_type="text/plain", query=query)
        assert response.status_code == 202
    tab = LeakTraceCluster.objects.get(signature="2d8918c3076020f19fa7ab4b6ca5cb4423772b20")
    assert tab.occurrences_in(version(android, "8.0.4")) == 1
    with pytest.raises(ContradictedFix) as caught:
        tab.change_triage(member, status=Status.FIXED, fixed_in_build=version(android, "8.0.4"))
    assert "still has 1 occurrence of this item" in caught.value.message
