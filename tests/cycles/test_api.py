"""The JSON API of retain cycles: clusters of an app, one cluster, PATCH for triage."""

from __future__ import annotations

import pytest

from memdash.cycles.models import Cluster
from tests.cycles.helpers import builds, loop, store

pytestmark = pytest.mark.django_db

UIKIT = (("UIView", ("_view",)), ("UIWindow", ("_window",)))


@pytest.fixture
def stored(app):
    b1, b2, b3 = builds(app, 3)
    store(app, b1, [loop("A", "B"), loop("A", "B", "C"), UIKIT], device_key="D-1")
    store(app, b2, [loop("A", "B"), loop("C", "D")], device_key="D-2")
    store(app, b3, [loop("A", "B", "C")], device_key="D-1")
    return b1, b2, b3


def test_clusters_of_an_app(api_client, app, stored):
    b1, _b2, b3 = stored
    body = api_client.get(f"/api/v1/apps/{app.pk}/cycles").json()
    assert body["algorithm_version"] == "cycles-2026.11"
    clusters = body["clusters"]
    # Sorted by occurrences: A-B has A-B twice and A-B-C twice = 4; C-D once; UIKit hidden.
    assert [c["key"] for c in clusters] == [["A", "B"], ["C", "D"]]
    ab = clusters[0]
    assert set(ab) >= {
        "id", "key", "status", "occurrences", "devices", "cycles", "first_seen_build",
        "last_seen_build", "regression", "assignee",
    }  # fmt: skip
    assert (ab["occurrences"], ab["devices"], ab["cycles"]) == (4, 2, 2)
    assert ab["first_seen_build"] == {"id": b1.pk, "version": "8.0.1", "number": "101"}
    assert ab["last_seen_build"]["id"] == b3.pk
    assert (ab["status"], ab["regression"], ab["assignee"]) == ("new", False, None)


def test_include_system_and_status_filters(api_client, app, stored):
    url = f"/api/v1/apps/{app.pk}/cycles"
    keys = [c["key"] for c in api_client.get(url, {"include_system": "true"}).json()["clusters"]]
    assert ["UIView", "UIWindow"] in keys and len(keys) == 3
    Cluster.objects.filter(key=["C", "D"]).update(status="ignored")
    ignored = api_client.get(url, {"status": "ignored"}).json()["clusters"]
    assert [c["key"] for c in ignored] == [["C", "D"]]
    both = api_client.get(url, {"status": "new,ignored"}).json()["clusters"]
    assert len(both) == 2
    bad = api_client.get(url, {"status": "closed"})
    assert bad.status_code == 400 and "status" in bad.json()["fields"]


def test_cluster_detail_with_member_cycles(api_client, app, stored):
    cluster = Cluster.objects.get(key=["A", "B"])
    body = api_client.get(f"/api/v1/cycles/{cluster.pk}").json()
    assert body["id"] == cluster.pk and body["key"] == ["A", "B"]
    members = {tuple(m["key"]): m for m in body["member_cycles"]}
    assert set(members) == {("A", "B"), ("A", "B", "C")}
    # ownership: "" (unknown) for every reference of a format that does not say it
    assert members[("A", "B", "C")]["cycle"] == [
        {"class": "A", "via": ["_a"], "ownership": ""},
        {"class": "B", "via": ["_b"], "ownership": ""},
        {"class": "C", "via": ["_c"], "ownership": ""},
    ]
    assert members[("A", "B", "C")]["retains"] is True
    assert members[("A", "B", "C")]["occurrences"] == 2
    assert [b["occurrences"] for b in body["occurrences_per_build"]] == [2, 1, 1]


def test_patch_triage(api_client, app, stored, member):
    _b1, b2, _b3 = stored
    (b4,) = [b for b in builds(app, 4) if b.version == "8.0.4"]  # no cycles stored in 8.0.4
    cluster = Cluster.objects.get(key=["A", "B"])
    url = f"/api/v1/cycles/{cluster.pk}"
    response = api_client.patch(
        url, {"status": "fixed", "assignee": "member", "fixed_in_build": b4.pk, "notes": "weak"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["assignee"], body["notes"]) == ("fixed", "member", "weak")
    assert body["fixed_in_build"]["id"] == b4.pk
    # a name no member has: not there (404, as any id not found), saying which value
    bad = api_client.patch(url, {"assignee": "nobody-here"}, format="json")
    assert bad.status_code == 404
    assert bad.json() == {"error": "the assignee must be a member of this app", "path": "assignee"}
    missing = api_client.patch(url, {"fixed_in_build": 2**62}, format="json")
    assert missing.status_code == 404
    assert missing.json() == {"error": "no such build of this app", "path": "fixed_in_build"}
    assert Cluster.objects.get(pk=cluster.pk).fixed_in_build_id == b4.pk  # nothing changed
    bad = api_client.patch(url, {"status": "done"}, format="json")
    assert bad.status_code == 400


def test_fixed_in_a_build_with_occurrences_needs_an_override(api_client, app, stored):
    _b1, b2, _b3 = stored
    cluster = Cluster.objects.get(key=["A", "B"])
    url = f"/api/v1/cycles/{cluster.pk}"
    # 8.0.2 has one A-B loop (its other loop, C-D, is another cluster's)
    refused = api_client.patch(url, {"status": "fixed", "fixed_in_build": b2.pk}, format="json")
    assert refused.status_code == 409 and refused.json()["path"] == "fixed_in_build"
    message = refused.json()["error"]
    assert "8.0.2 (102) still has 1 occurrence of this item" in str(message)
    cluster.refresh_from_db()
    assert (cluster.status, cluster.fixed_in_build) == ("new", None)
    for not_a_flag in ("yes", 1):
        body = {"fixed_in_build": b2.pk, "override": not_a_flag}
        assert api_client.patch(url, body, format="json").status_code == 400
    assert api_client.patch(url, {"override": True}, format="json").status_code == 400
    body = {"status": "fixed", "fixed_in_build": b2.pk, "override": True}
    response = api_client.patch(url, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["fixed_in_build"]["id"] == b2.pk
    event = cluster.triage_events.get()
    assert event.changes[-1] == {
        "field": "override", "from": None, "to": "fixed despite 1 occurrence in 8.0.2 (102)",
    }  # fmt: skip


def test_clusters_are_paged(api_client, app, stored):
    url = f"/api/v1/apps/{app.pk}/cycles"
    # With system clusters: A-B (4 occurrences), then UIKit and C-D (1 each, ties by id).
    everything = api_client.get(url, {"include_system": "true"}).json()
    assert (everything["count"], everything["limit"], everything["offset"]) == (3, 100, 0)
    keys = [c["key"] for c in everything["clusters"]]
    assert keys[0] == ["A", "B"] and len(keys) == 3
    first = api_client.get(url, {"include_system": "true", "limit": 2}).json()
    second = api_client.get(url, {"include_system": "true", "limit": 2, "offset": 2}).json()
    assert (first["count"], second["count"]) == (3, 3)  # the total, not the page's size
    assert "offset=2" in first["next"] and "include_system=true" in first["next"]
    assert second["next"] is None and everything["next"] is None
    assert [c["key"] for c in first["clusters"]] + [c["key"] for c in second["clusters"]] == keys
    past_the_end = api_client.get(url, {"offset": 10}).json()
    assert (past_the_end["count"], past_the_end["clusters"]) == (2, [])
    for bad in ({"limit": 0}, {"limit": 1001}, {"limit": "x"}, {"offset": -1}):
        response = api_client.get(url, bad)
        assert response.status_code == 400 and set(bad) <= set(response.json()["fields"])


def test_assignee_errors_do_not_tell_users_from_non_members(api_client, stored, outsider):
    url = f"/api/v1/cycles/{Cluster.objects.get(key=['A', 'B']).pk}"
    unknown = api_client.patch(url, {"assignee": "nobody-here"}, format="json")
    not_member = api_client.patch(url, {"assignee": outsider.username}, format="json")
    assert (unknown.status_code, unknown.json()) == (not_member.status_code, not_member.json())
