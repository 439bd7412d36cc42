"""Odd text in URLs and forms gets a 4xx, never a 500 (on PostgreSQL as on SQLite)."""

from __future__ import annotations

import pytest

from memdash.core.logic.numbers import whole_number
from memdash.core.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("text", "expected"),
    [("42", 42), ("0", 0), ("9223372036854775807", 2**63 - 1), ("9223372036854775808", None),
     ("²", None), ("٣", None), ("-1", None), ("1.0", None), ("", None), (None, None)],
)  # fmt: skip
def test_whole_number(text, expected):
    assert whole_number(text) == expected


def test_nul_in_a_query_parameter_is_refused_before_any_view(member_client, app):
    response = member_client.get("/api/v1/apps", {"q": "a\x00b"})
    assert response.status_code == 400
    assert response.json()["error"] == "the query parameter 'q' contains a NUL character"
    assert member_client.get(f"/apps/{app.pk}/trends/", {"category": "\x00"}).status_code == 400


def test_nul_in_the_path_is_refused(member_client):
    assert member_client.get("/api/v1/sessions/1%00").status_code == 400


def test_session_refs_and_app_ids_that_are_no_numbers(member_client, app):
    assert member_client.get("/api/v1/sessions/²").status_code == 404
    assert member_client.get("/api/v1/sessions/x", {"app": "²"}).status_code == 404
    huge = "99999999999999999999"
    assert member_client.get("/api/v1/sessions/x", {"app": huge}).status_code == 404
    assert member_client.get(f"/api/v1/sessions/{huge}").status_code == 404


def test_token_revoke_of_no_number_is_not_found(member_client, member):
    assert member_client.post("/tokens/", {"revoke": "abc"}).status_code == 404
    assert member_client.post("/tokens/", {"revoke": "²"}).status_code == 404


def test_token_name_with_nul_is_refused(member_client, member):
    response = member_client.post("/tokens/", {"name": "a\x00b"}, follow=True)
    assert response.status_code == 200
    assert "Null characters are not allowed" in response.content.decode()
    assert not ApiToken.objects.exists()
    member_client.post("/tokens/", {"name": "laptop"})
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["laptop"]


def test_api_schema_and_docs_need_a_login(client, member_client):
    assert client.get("/api/v1/schema/").status_code in (401, 403)
    assert client.get("/api/v1/docs/").status_code in (401, 403)
    assert member_client.get("/api/v1/schema/").status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/diff?base=snapshot:²&target=snapshot:1",
        "/api/v1/diff?base=generation:1:²&target=snapshot:1",
    ],
)
def test_diff_refs_with_other_digits(member_client, url):
    assert member_client.get(url).status_code in (400, 404)
