"""Every page and every read API of the demo answers, on whatever database the suite runs on
(SQLite, PostgreSQL, the Citus cluster: CI runs it on each). The demo's user opens the apps page
and follows every link the pages show (a few of each kind of page, with each set of query
parameters): each answers 200 (or redirects). Then every GET operation of the OpenAPI document
is asked with the ids those pages named: none answers 5xx, and most answer 200."""

from __future__ import annotations

import re
from collections import Counter, deque
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from django.test import Client
from django.urls import Resolver404, resolve

from memdash import settings as project_settings
from memdash.allocations.models import Snapshot

# A kind of page (its URL name, and which query parameters it has) is opened this many times.
EACH_KIND = 2
# Links that end the session or leave the site's pages: not followed.
NOT_FOLLOWED = re.compile(r"^/(logout|admin|static|media|api/v1/docs|favicon)")


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


def links_of(html: str) -> list[str]:
    parser = Links()
    parser.feed(html)
    found = []
    for href in parser.hrefs:
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or not parts.path.startswith("/"):
            continue  # another site, a fragment, mailto:
        if NOT_FOLLOWED.match(parts.path):
            continue
        found.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return found


def kind_of(url: str) -> tuple[str, frozenset[str]] | None:
    parts = urlsplit(url)
    try:
        match = resolve(parts.path)
    except Resolver404:
        return None
    keys = frozenset(q.split("=", 1)[0] for q in parts.query.split("&") if q)
    return match.view_name, keys


Values = dict[str, list[str]]


def crawl(client: Client, start: list[str]) -> tuple[dict[str, int], Values, dict[str, int]]:
    """(url -> status of every page opened, parameter (of a path or a query) -> the values
    seen, kind -> count)."""
    statuses: dict[str, int] = {}
    params: Values = {}
    kinds: Counter[tuple[str, frozenset[str]]] = Counter()
    queue = deque(start)
    while queue:
        url = queue.popleft()
        if url in statuses:
            continue
        kind = kind_of(url)
        if kind is not None:
            if kinds[kind] >= EACH_KIND:
                continue
            kinds[kind] += 1
            seen = [(k, str(v)) for k, v in resolve(urlsplit(url).path).kwargs.items()]
            seen += parse_qsl(urlsplit(url).query)
            for name, value in seen:
                if value not in params.setdefault(name, []):
                    params[name].append(value)
        response = client.get(url)
        statuses[url] = response.status_code
        if response.status_code in (301, 302):
            queue.append(response["Location"])
        elif response.status_code == 200 and "text/html" in response.get("Content-Type", ""):
            queue.extend(links_of(response.content.decode()))
    return statuses, params, {f"{name} {sorted(keys)}": n for (name, keys), n in kinds.items()}


def get_operations(client: Client) -> list[tuple[str, list[str]]]:
    """Each GET operation's path, with the query parameters it requires."""
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    return [
        (
            path,
            [
                p["name"]
                for p in ops["get"].get("parameters", [])
                if p["in"] == "query" and p.get("required")
            ],
        )
        for path, ops in schema["paths"].items()
        if "get" in ops
    ]


def ask(client: Client, path: str, required: list[str], params: Values) -> tuple[str, int] | None:
    """The operation asked with the values the pages showed (a few of each, the same name may
    be another object's id on another page): the first URL that answers 200, or the last one's
    status; None when a page never showed a value it needs."""
    names = re.findall(r"\{(\w+)\}", path)
    if any(name not in params for name in [*names, *required]):
        return None
    tried: tuple[str, int] | None = None
    for i in range(3):
        values = {name: params[name][min(i, len(params[name]) - 1)] for name in [*names, *required]}
        url = re.sub(r"\{(\w+)\}", lambda m, v=values: v[m.group(1)], path)
        if required:
            url += "?" + urlencode({name: values[name] for name in required})
        tried = (url, client.get(url).status_code)
        if tried[1] == 200:
            break
    return tried


@pytest.mark.slow
def test_every_page_and_read_api_of_the_demo_answers(loaded_demo, db, settings):
    # The demo (loaded once for the module, before this test's own MEDIA_ROOT) stored its
    # debug files' symbol caches under the project's MEDIA_ROOT: its pages read them there.
    settings.MEDIA_ROOT = project_settings.MEDIA_ROOT
    client = Client()
    client.force_login(loaded_demo.user)
    # The apps page, and a snapshot of each shape (the build page lists its snapshots in a
    # table its script fills from the API).
    shapes = Snapshot.objects.filter(app=loaded_demo.app).values("source_format")
    snapshots = [
        Snapshot.objects.filter(app=loaded_demo.app, source_format=shape).order_by("pk").first()
        for shape in {row["source_format"] for row in shapes}
    ]
    start = ["/", *(f"/snapshots/{s.pk}/" for s in snapshots if s is not None)]
    statuses, params, kinds = crawl(client, start)
    failed = {url: status for url, status in statuses.items() if status not in (200, 301, 302)}
    assert failed == {}
    # The crawl reached the lenses' pages, not only the apps page.
    names = {kind.split(" ")[0].split(":")[-1] for kind in kinds}
    assert {"app_detail", "build_detail", "snapshot_detail", "cluster_detail"} <= names, sorted(
        names
    )
    assert len(kinds) >= 30, sorted(kinds)

    asked, unreachable = {}, []
    for path, required in get_operations(client):
        answer = ask(client, path, required, params)
        if answer is None:
            unreachable.append(path)
        else:
            asked[answer[0]] = answer[1]
    # None breaks (a 500); the ids a page showed answer (an id of another kind of object under
    # the same name, or a parameter the pages never set, may answer 404 or 400, never 5xx).
    assert {url: s for url, s in asked.items() if s >= 500} == {}
    answered = [url for url, s in asked.items() if s == 200]
    assert len(answered) >= 25, (sorted(asked.items()), unreachable)
