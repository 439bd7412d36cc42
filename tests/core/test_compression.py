"""Pages (and the API's JSON) are sent gzip-compressed to a client that accepts it; the CSRF
token in them is masked afresh on every response, so compression reveals nothing (BREACH)."""

from __future__ import annotations

import gzip
import re

import pytest

from tests.cycles.helpers import builds, loop, store

pytestmark = pytest.mark.django_db


def test_a_page_is_compressed_for_a_client_that_accepts_it(member_client, app):
    plain = member_client.get(f"/apps/{app.pk}/cycles/")
    packed = member_client.get(f"/apps/{app.pk}/cycles/", headers={"accept-encoding": "gzip"})
    assert "Content-Encoding" not in plain
    assert packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    page = gzip.decompress(packed.content).decode()
    assert "<title>" in page and len(packed.content) < len(plain.content)


def test_the_csrf_token_differs_on_every_response(member_client, app):
    tokens = set()
    for _ in range(2):
        page = member_client.get("/tokens/", headers={"accept-encoding": "gzip"})
        html = gzip.decompress(page.content).decode()
        tokens |= set(re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', html))
    assert len(tokens) == 2


def test_json_is_compressed_too(api_client, app):
    (build,) = builds(app, 1)
    store(app, build, [loop("A", "B"), loop("C", "D")])  # a body over GZipMiddleware's 200 bytes
    url = f"/api/v1/apps/{app.pk}/cycles"
    response = api_client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert response["Content-Encoding"] == "gzip"
    assert b'"algorithm_version"' in gzip.decompress(response.content)
