"""Under the embedded default (DEBUG on) a path nobody serves gets the site's own 404 page, not
Django's debug page with its list of every URL pattern; under /api/ the API's JSON 404. A path
missing its slash is still redirected to it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture(params=[True, False], ids=["debug", "production"])
def debug(request, settings):
    settings.DEBUG = request.param
    return request.param


def test_an_unknown_page_is_the_sites_404(debug, member_client):
    response = member_client.get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "<title>Not found · memdash</title>" in html
    assert "/no/such/page/" in html
    assert "URLconf" not in html and "api/v1/apps" not in html  # no list of the routes


def test_a_view_that_finds_nothing_answers_the_sites_404(debug, member_client):
    response = member_client.get("/apps/999999/cycles/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "<title>Not found · memdash</title>" in html and "URLconf" not in html


def test_an_unknown_api_path_is_json(debug, api_client):
    response = api_client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response.json() == {"error": "No such API path."}
    # an API view's own 404 keeps its message
    missing = api_client.get("/api/v1/cycles/999999")
    assert missing.status_code == 404 and missing.json() == {"error": "No such cluster"}


def test_a_path_missing_its_slash_is_still_redirected(debug, client):
    response = client.get("/login")
    assert response.status_code == 301 and response["Location"] == "/login/"
