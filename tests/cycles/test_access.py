"""Access: pages and API only for the app's members; settings changes only for its admins."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from memdash.core.models import Membership
from memdash.core.writes import apps as core_services
from memdash.cycles.models import Cluster
from memdash.cycles.reads.clusters import own_system_prefixes
from tests.cycles.helpers import builds, loop, store

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(app):
    (b1,) = builds(app, 1)
    store(app, b1, [loop("A", "B")])
    return Cluster.objects.get()


def test_anonymous_is_sent_to_login(client, app, cluster):
    for url in (
        f"/apps/{app.pk}/cycles/",
        cluster.get_absolute_url(),
        f"/apps/{app.pk}/cycles/settings/",
    ):
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]
    assert client.get(f"/api/v1/apps/{app.pk}/cycles").status_code in (401, 403)


def test_outsider_gets_404_everywhere(outsider, app, cluster):
    web = Client()
    web.force_login(outsider)
    assert web.get(f"/apps/{app.pk}/cycles/").status_code == 404
    assert web.get(cluster.get_absolute_url()).status_code == 404
    assert web.post(cluster.get_absolute_url(), {"triage-status": "ignored"}).status_code == 404
    api = APIClient()
    api.force_authenticate(outsider)
    assert api.get(f"/api/v1/apps/{app.pk}/cycles").status_code == 404
    assert api.get(f"/api/v1/cycles/{cluster.pk}").status_code == 404
    assert (
        api.patch(f"/api/v1/cycles/{cluster.pk}", {"status": "ignored"}, format="json").status_code
        == 404
    )
    cluster.refresh_from_db()
    assert cluster.status == "new"


def test_cluster_of_another_app_is_not_found_under_this_app(member_client, app, cluster):
    other = core_services.get_or_create_app("com.other", "ios")
    member = Membership.objects.get(app=app).user
    core_services.add_member(other, member, Membership.VIEWER)
    assert member_client.get(f"/apps/{other.pk}/cycles/{cluster.pk}/").status_code == 404


def test_viewer_only_reads_triage(app, cluster, django_user_model):
    viewer = django_user_model.objects.create_user("viewer")
    core_services.add_member(app, viewer, Membership.VIEWER)
    web = Client()
    web.force_login(viewer)
    page = web.get(cluster.get_absolute_url())
    assert page.status_code == 200
    assert b'data-testid="triage-read-only"' in page.content
    assert b'name="triage-save"' not in page.content
    assert web.post(cluster.get_absolute_url(), {"triage-status": "open"}).status_code == 403
    api = APIClient()
    api.force_authenticate(viewer)
    assert api.get(f"/api/v1/cycles/{cluster.pk}").status_code == 200
    refused = api.patch(f"/api/v1/cycles/{cluster.pk}", {"status": "open"}, format="json")
    assert refused.status_code == 403 and "Viewers only read" in refused.json()["error"]
    cluster.refresh_from_db()
    assert cluster.status == "new"


def test_member_can_triage_but_not_change_prefixes(app, cluster, django_user_model):
    member = django_user_model.objects.create_user("plain-member")
    core_services.add_member(app, member, Membership.MEMBER)
    web = Client()
    web.force_login(member)
    assert b'name="triage-save"' in web.get(cluster.get_absolute_url()).content
    response = web.post(cluster.get_absolute_url(), {"triage-status": "open"})
    assert response.status_code == 302
    cluster.refresh_from_db()
    assert cluster.status == "open"
    api = APIClient()
    api.force_authenticate(member)
    patched = api.patch(f"/api/v1/cycles/{cluster.pk}", {"status": "ignored"}, format="json")
    assert patched.status_code == 200 and patched.json()["status"] == "ignored"
    page = web.get(f"/apps/{app.pk}/cycles/settings/")
    assert page.status_code == 200 and b"Only the app's admins" in page.content
    assert web.post(f"/apps/{app.pk}/cycles/settings/", {"prefixes": "A"}).status_code == 403
    app.refresh_from_db()
    assert own_system_prefixes(app) == []


def test_triage_post_needs_csrf(app, cluster, member):
    web = Client(enforce_csrf_checks=True)
    web.force_login(member)
    assert web.post(cluster.get_absolute_url(), {"triage-status": "ignored"}).status_code == 403
