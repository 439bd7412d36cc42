"""The alerts page and the settings page's alerts section; the API: admins change, members read,
outsiders see nothing; what a user typed is escaped."""

from __future__ import annotations

import pytest
from django.test import Client

from memdash.alerts.models import AlertRule, Destination
from memdash.alerts.writes import rules as writes
from memdash.core.models import Membership
from memdash.core.writes import apps as core_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer_client(app, django_user_model):
    user = django_user_model.objects.create_user("viewer", password="viewer-pass-123")
    core_services.add_member(app, user, Membership.VIEWER)
    client = Client()
    client.force_login(user)
    return client


def test_an_admin_adds_a_destination_and_a_rule_on_the_settings_page(app, member_client):
    settings_url = f"/apps/{app.pk}/settings/"
    answer = member_client.post(
        f"/apps/{app.pk}/settings/alerts/destinations/",
        {
            "name": "<b>ops</b>",
            "kind": "webhook",
            "target": "https://hooks.example.com/x",
            "digest_minutes": 0,
        },
    )
    assert answer.status_code == 302 and answer["Location"] == settings_url + "#alerts"
    member_client.post(
        f"/apps/{app.pk}/settings/alerts/rules/",
        {
            "kind": "category_growth",
            "max_growth": "10%",
            "alpha": "0.05",
            "min_runs": 100,
            "significant": "on",
        },
    )
    rule = AlertRule.objects.get()
    assert (rule.kind, rule.max_growth) == ("category_growth", "10%")
    assert list(rule.destinations.values_list("name", flat=True)) == ["<b>ops</b>"]
    page = member_client.get(settings_url).content.decode()
    assert "&lt;b&gt;ops&lt;/b&gt;" in page and "<b>ops</b>" not in page
    assert "growth past 10%" in page and Destination.objects.get().secret in page

    # The growth limit is read as build compare reads it: a word is refused, nothing stored.
    member_client.post(
        f"/apps/{app.pk}/settings/alerts/rules/",
        {"kind": "category_growth", "max_growth": "lots", "alpha": "0.05", "min_runs": 1},
    )
    assert AlertRule.objects.count() == 1


def test_a_viewer_reads_but_cannot_change(app, viewer_client, member):
    writes.create_destination(app, {"name": "ops", "kind": "email", "target": "a@example.com"})
    page = viewer_client.get(f"/apps/{app.pk}/alerts/")
    assert page.status_code == 200 and b"Nothing is alerting" in page.content
    refused = viewer_client.post(
        f"/apps/{app.pk}/settings/alerts/rules/", {"kind": "churn", "alpha": "0.05", "min_runs": 1}
    )
    assert refused.status_code == 403 and not AlertRule.objects.exists()
    settings_page = viewer_client.get(f"/apps/{app.pk}/settings/").content.decode()
    assert "whsec_" not in settings_page and 'id="rule-form"' not in settings_page


def test_the_api(app, api_client, outsider_client):
    created = api_client.post(
        f"/api/v1/apps/{app.pk}/alert-destinations",
        {"name": "ops", "kind": "email", "target": "a@example.com, b@example.com"},
        format="json",
    )
    assert created.status_code == 201 and created.json()["secret"].startswith("whsec_")
    assert created.json()["target"] == "a@example.com, b@example.com"
    wrong = api_client.post(
        f"/api/v1/apps/{app.pk}/alert-destinations",
        {"name": "x", "kind": "email", "target": "not-an-address"},
        format="json",
    )
    assert wrong.status_code == 400 and "target" in wrong.json()["fields"]
    rule = api_client.post(
        f"/api/v1/apps/{app.pk}/alert-rules",
        {"kind": "foom_rate", "threshold_percent": 2.5, "min_runs": 50},
        format="json",
    ).json()
    assert rule["destinations"] == [created.json()["id"]] and rule["significant"] is True
    patched = api_client.patch(
        f"/api/v1/apps/{app.pk}/alert-rules/{rule['id']}", {"enabled": False}, format="json"
    )
    assert patched.status_code == 200 and patched.json()["enabled"] is False
    assert patched.json()["threshold_percent"] == 2.5
    assert api_client.get(f"/api/v1/apps/{app.pk}/alerts").json() == []
    assert outsider_client.get(f"/api/v1/apps/{app.pk}/alert-rules").status_code == 404
    gone = api_client.delete(f"/api/v1/apps/{app.pk}/alert-rules/{rule['id']}")
    assert gone.status_code == 204 and not AlertRule.objects.exists()
