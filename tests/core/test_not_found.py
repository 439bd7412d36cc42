"""Selectors say what they do not find with the model's DoesNotExist; the views answer it as the
same 404 as before (pages), with the same `{"error": ...}` (API)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memdash.allocations.models import Snapshot
from memdash.allocations.reads.snapshots import snapshot_for_user
from memdash.core.models import App
from memdash.core.reads.apps import app_for_user
from memdash.foom.models import Session
from memdash.foom.reads.rates import session_for_user
from tests.samples import spec_example

pytestmark = pytest.mark.django_db


def test_selectors_raise_does_not_exist_for_what_a_user_may_not_see(upload, app, member, outsider):
    snapshot_id = upload(spec_example()).json()["snapshot"]["id"]
    assert app_for_user(member, app.pk) == app
    with pytest.raises(App.DoesNotExist, match="No such app"):
        app_for_user(outsider, app.pk)  # exists, but not his
    with pytest.raises(App.DoesNotExist, match="No such app"):
        app_for_user(member, "not a number")
    with pytest.raises(Snapshot.DoesNotExist, match="No such snapshot"):
        snapshot_for_user(outsider, snapshot_id)
    with pytest.raises(Session.DoesNotExist):
        session_for_user(member, app.pk, 999_999)  # no such run in a visible app
    with pytest.raises(App.DoesNotExist):
        session_for_user(outsider, app.pk, 1)


def test_views_answer_404_with_the_selectors_words(upload, app, outsider):
    snapshot_id = upload(spec_example()).json()["snapshot"]["id"]
    client = APIClient()
    client.force_authenticate(outsider)
    for url, error in [
        (f"/api/v1/apps/{app.pk}/builds", "No such app"),
        (f"/api/v1/snapshots/{snapshot_id}", "No such snapshot"),
        (f"/api/v1/snapshots/{snapshot_id}/statistics", "No such snapshot"),
    ]:
        response = client.get(url)
        assert (response.status_code, response.json()) == (404, {"error": error}), url
    client.force_login(outsider)
    for url in [
        f"/apps/{app.pk}/",
        f"/snapshots/{snapshot_id}/",
        f"/apps/{app.pk}/foom/sessions/1/",
        f"/apps/{app.pk}/snapshots/{snapshot_id}/generation-diff/",
    ]:
        assert client.get(url).status_code == 404, url


def test_a_member_gets_404_for_a_run_that_is_not_there(app, member_client):
    assert member_client.get(f"/apps/{app.pk}/foom/sessions/999999/").status_code == 404
