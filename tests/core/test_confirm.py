"""Revoking a token or an ingest key asks first: the first POST answers a confirmation page
(static/js/keys.js asks in a dialog instead, then sends confirm=1); a new secret has a Copy
button, which keys.js shows and wires (no inline script)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memdash.core.models import ApiToken, IngestKey
from memdash.core.writes import apps as services

pytestmark = pytest.mark.django_db


def test_revoking_a_token_asks_first(member_client, member):
    member_client.post(reverse("core:tokens"), {"name": "laptop"})
    page = member_client.get(reverse("core:tokens")).content.decode()
    token = ApiToken.objects.get(user=member)
    assert 'id="new-token"' in page and 'data-copy="new-token" hidden' in page
    assert 'data-confirm="Revoke the token' in page and "js/keys.js" in page
    assert "<script>" not in page.replace("<script></script>", "")

    asked = member_client.post(reverse("core:tokens"), {"revoke": token.pk})
    html = asked.content.decode()
    assert asked.status_code == 200 and "Revoke this API token?" in html
    assert f'name="revoke" value="{token.pk}"' in html and 'name="confirm" value="1"' in html
    token.refresh_from_db()
    assert token.is_active

    done = member_client.post(reverse("core:tokens"), {"revoke": token.pk, "confirm": "1"})
    assert done.status_code == 302
    token.refresh_from_db()
    assert not token.is_active


def test_the_confirmation_names_the_key_as_text(member_client, app):
    key, _secret = services.create_ingest_key(app, "<b>CI</b>")
    url = reverse("site:key_revoke", args=[app.pk, key.pk])
    html = member_client.post(url).content.decode()
    assert "&lt;b&gt;CI&lt;/b&gt;" in html and "<b>CI</b>" not in html
    settings_page = member_client.get(reverse("site:app_settings", args=[app.pk])).content.decode()
    assert "<b>CI</b>" not in settings_page
    assert IngestKey.objects.get(pk=key.pk).is_active
