"""The worst strings a device can send, through every format that carries text to a page: each
is stored (and indexed safely, whatever its length) or refused with a 400 naming its path, and
then no page of the app answers 500 or renders the markup they hold (issue 21).

The pages are found by following every link from the app's pages, as a user would, so a page
added later is covered without being listed here."""

from __future__ import annotations

from collections import deque
from html.parser import HTMLParser
from urllib.parse import urldefrag, urlparse

import pytest

from memdash.allocations.models import Category
from memdash.cycles.models import RetainCycle
from tests.samples import retain_cycles_example, spec_example

pytestmark = pytest.mark.django_db

MARKUP = (
    '<a href="https://evil.example/">x</a><script>alert(1)</script><img src=x onerror=alert(2)>'
)
# Markup, quotes, template and format syntax, a right-to-left override, astral characters,
# backslashes: 5,000 characters, past PostgreSQL's btree row limit (~2,700 bytes).
WORST = (MARKUP + "'\"{{x}}{%x%}%s%(x)s\\u0000\u202e\U0001f4a5 ") * 40
WORST = WORST[:5000]
SHORT = MARKUP + "\u202e\U0001f4a5"  # for fields a length limit refuses the long one in
BUILD = {"version": "8.0.51", "number": "2741"}


def accepted_or_refused_with_path(response) -> bool:
    """True when stored; a refusal must be a 400 with the offending value's path."""
    body = response.json()
    if response.status_code == 400:
        assert body.get("path"), body
        return False
    assert response.status_code == 202, body
    assert body["status"] == "done", body
    return True


def snapshot_document(text: str) -> dict:
    return spec_example(
        images=[{"name": text}],
        frames=[{"symbol": text, "file": text, "image": 0}, text],
        stacks=[[None, 0], [0, 1]],
        threads=[text],
        generations=[{"name": text[:255], "at_ms": 0}],  # the format's limit
        allocations=[
            {"category": text, "stack": 1, "thread": 0, "generation": 0, "persistent": 2,
             "persistent_bytes": 64, "transient": 1, "transient_bytes": 32},
            {"category": "Other", "stack": 0, "persistent": 1, "persistent_bytes": 16},
        ],
    )  # fmt: skip


def sessions_document(text: str) -> dict:
    return {
        "format": "memdash.sessions",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "sessions": [
            {
                "id": text[:200],
                "device": {"id": "A1B2", "model": text[:100]},
                "build": BUILD,
                "os": text[:60],
                "started_at": "2026-11-20T10:02:00+00:00",
                "last_seen_at": "2026-11-20T10:14:41+00:00",
                "end": {"state": "foreground", "active_for_ms": 91000, "memory_warnings": 1},
            }
        ],
    }


def churn_document(text: str) -> dict:
    return {
        "format": "memdash.churn",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "build": BUILD,
        "device": {"id": "ci-1", "model": "iPhone13,2"},
        "captured_at": "2026-11-20T10:00:00+00:00",
        "runs": [
            {
                "id": "r1",
                "scenarios": [
                    {
                        "name": text,
                        "elapsed_ms": 1e20,
                        "functions": {"malloc": {"count": 4, "bytes": 64, "log2_bytes": 16.0}},
                    }
                ],
            }
        ],
    }


def fbat_summary(text: str) -> list[dict]:
    return [
        {"className": text, "allocations": 3, "deallocations": 1, "aliveObjects": 2,
         "instanceSize": 48},
    ]  # fmt: skip


def lsan_report(text: str) -> bytes:
    return (
        "=================================================================\n"
        "==42==ERROR: LeakSanitizer: detected memory leaks\n\n"
        "Direct leak of 64 byte(s) in 1 object(s) allocated from:\n"
        "    #0 0x4d5058 in malloc (/out/fuzzer+0x4d5058)\n"
        f"    #1 0x52a1c3 in {text.replace(chr(10), ' ')} /src/{text[:200]}.c:12:3\n"
        "    #2 0x52a2d0 in main /src/main.c:3:1\n\n"
        "SUMMARY: LeakSanitizer: 64 byte(s) leaked in 1 allocation(s).\n"
    ).encode()


def send_every_format(upload, text: str) -> list[bool]:
    query = "build_version=8.0.51&build_number=2741&device_id=A1B2"
    return [
        accepted_or_refused_with_path(upload(snapshot_document(text))),
        accepted_or_refused_with_path(upload(sessions_document(text))),
        accepted_or_refused_with_path(
            upload(
                retain_cycles_example(
                    cycles=[
                        [
                            {"class": text, "via": []},
                            {"class": "ChatDataSource", "via": [text]},
                        ]
                    ]
                )
            )  # fmt: skip
        ),
        accepted_or_refused_with_path(upload(churn_document(text))),
        accepted_or_refused_with_path(upload(fbat_summary(text), query=query)),
        accepted_or_refused_with_path(
            upload(lsan_report(text), content_type="text/plain", query=query)
        ),
    ]


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs.extend(v for k, v in attrs if k == "href" and v)


def crawl(client, start: str, limit: int = 400) -> dict[str, int]:
    """GET every page reachable from `start` by links inside the site (at most `limit`; a few
    query variants of one path), checking each as it goes."""
    seen: dict[str, int] = {}
    variants: dict[str, int] = {}
    queue = deque([start])
    while queue and len(seen) < limit:
        url = queue.popleft()
        if url in seen:
            continue
        response = client.get(url)
        seen[url] = response.status_code
        assert response.status_code < 500, url
        assert "/login/" not in response.get("Location", ""), url  # still signed in
        if "text/html" not in response.get("Content-Type", ""):
            continue
        html = response.content.decode()
        for raw in ('https://evil.example/">', "<script>alert", "<img src=x"):
            assert raw not in html, (url, raw)
        parser = Links()
        parser.feed(html)
        for href in parser.hrefs:
            link, _ = urldefrag(href)
            parts = urlparse(link)
            if parts.scheme or parts.netloc or not parts.path.startswith("/"):
                continue
            if parts.path.startswith(("/static/", "/logout", "/admin/")):
                continue
            variants[parts.path] = variants.get(parts.path, 0) + 1
            if link not in seen and variants[parts.path] <= 3:
                queue.append(link)
    return seen


def test_the_worst_strings_are_stored_or_refused_and_every_page_renders(upload, app, member_client):
    stored_long = send_every_format(upload, WORST)
    stored_short = send_every_format(upload, SHORT)
    # What the formats take at any length is stored whole: categories, frames, class names.
    assert stored_long[0] and stored_long[4]
    assert all(stored_short), stored_short
    assert Category.objects.filter(app=app, name=WORST).count() == 1
    assert RetainCycle.objects.filter(app=app).exists()
    pages = crawl(member_client, f"/apps/{app.pk}/")
    # the crawl reached the pages of every lens the uploads fed
    for part in ("/snapshots/", "/cycles", "/leaks", "/churn", "/foom", "/builds/"):
        assert any(part in url for url in pages), (part, sorted(pages)[:50])


def test_a_long_category_is_one_category_however_often_it_is_sent(upload, app):
    for minute in (10, 11):  # two captures (the same bytes twice would be one upload)
        doc = snapshot_document(WORST) | {"captured_at": f"2026-11-20T10:{minute}:00+00:00"}
        assert accepted_or_refused_with_path(upload(doc))
    assert Category.objects.filter(app=app, name=WORST).count() == 1
