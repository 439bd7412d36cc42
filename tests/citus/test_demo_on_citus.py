"""Every page the demo links to answers on the cluster (memdash/site/writes/citus.py): the
demo loaded as `manage.py load_demo` loads it (every app's part), then each link of its pages
followed. Skipped without a cluster, failed under MEMDASH_REQUIRE_CITUS=1."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from django.urls import Resolver404, resolve

from tests.citus.cluster import require_citus


@pytest.fixture
def citus(db):
    require_citus()


INTERNAL = re.compile(r'(?:href|data-[a-z-]*url|data-src)="(/[^"#]*)"')
LEAVE_ALONE = ("/logout", "/static/", "/admin/", "/api/schema", "/api/docs")


def test_every_page_the_demo_links_to_answers(citus, loaded_demo, client):
    """From the apps page, each link to a page of memdash (at most three of each URL pattern,
    each at most once) answers 200 on the cluster; what the pages read is answered there."""
    client.force_login(loaded_demo.user)
    seen: set[str] = set()
    per_pattern: Counter[str] = Counter()
    todo = ["/"]
    answered = 0
    while todo:
        url = todo.pop(0)
        response = client.get(url)
        assert response.status_code in (200, 202), (url, response.status_code)
        answered += 1
        if "html" not in response.get("Content-Type", ""):
            continue
        for found in INTERNAL.findall(response.content.decode()):
            path = found.replace("&amp;", "&")
            if path in seen or path.startswith(LEAVE_ALONE):
                continue
            try:
                pattern = resolve(path.split("?")[0]).route
            except Resolver404:
                continue
            seen.add(path)
            if per_pattern[pattern] < 3:
                per_pattern[pattern] += 1
                todo.append(path)
    assert answered > 50  # the demo's apps, builds, snapshots, trees, FOOM, cycles, leaks …
