"""Everything a page loads comes from our own static files: no CDN, no other host."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db

# what a page loads or links to: src= and href= attributes, url(...) in inline styles
REFERENCE = re.compile(r"""(?:src|href)\s*=\s*["']([^"']*)["']|url\(\s*["']?([^"')]+)""")


def references(html: str) -> list[str]:
    return [a or b for a, b in REFERENCE.findall(html)]


def test_api_docs_reference_no_other_host(member_client):
    response = member_client.get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    found = references(html)
    assert any("swagger-ui-bundle.js" in ref for ref in found)
    # the favicon too (drf-spectacular's default is the jsdelivr CDN)
    assert '<link rel="icon" href="/static/drf_spectacular_sidecar/' in html
    assert all(ref.startswith("/") and not ref.startswith("//") for ref in found), found
    assert "://" not in html and "cdn." not in html


def test_favicon(client, member_client, app):
    response = client.get("/favicon.ico")
    assert response.status_code == 302 and response["Location"] == "/static/favicon.svg"
    assert client.get("/static/favicon.svg").status_code == 200
    html = member_client.get("/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    assert all(not ref.startswith(("http:", "https:", "//")) for ref in references(html))
