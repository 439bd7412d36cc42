"""Issue-tracker links: an app's "new issue" address filled with a cluster's title, builds,
counts and the link back; the tracker issue's URL recorded in the triage (page and API)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from memdash.cycles.models import Cluster
from memdash.triage.logic.tracker import filled
from memdash.triage.models import TrackedIssue, TriageEvent
from tests.cycles.helpers import builds, loop, store

pytestmark = pytest.mark.django_db
GITHUB = "https://github.com/acme/chat/issues/new?title={title}&body={body}&labels=memory"


def test_placeholders_are_url_encoded():
    assert filled("https://t.example/new?t={title}&x={nope}", {"title": "A & B/C"}) == (
        "https://t.example/new?t=A%20%26%20B%2FC&x={nope}"
    )


@pytest.fixture
def cluster(app):
    build = builds(app, 2)[1]
    store(app, build, [loop("ChatViewController", "ChatCell")])
    return Cluster.objects.get(app=app)


def test_the_settings_page_sets_the_tracker_and_the_cluster_links_to_it(
    app, cluster, member_client, settings
):
    saved = member_client.post(f"/apps/{app.pk}/settings/tracker/", {"new_issue_url": GITHUB})
    assert saved.status_code == 302
    page = member_client.get(cluster.get_absolute_url()).content.decode()
    start = page.index('data-testid="new-issue"')
    href = page[
        page.rindex('href="', 0, start) + 6 : page.index('"', page.rindex('href="', 0, start) + 6)
    ]
    query = parse_qs(urlsplit(href.replace("&amp;", "&")).query)
    assert query["title"] == [str(cluster)] and query["labels"] == ["memory"]
    body = query["body"][0]
    assert "First seen in 8.0.2 (102), last seen in 8.0.2 (102). 1 occurrences." in body
    back = settings.MEMDASH_PUBLIC_URL + cluster.get_absolute_url()
    assert body.endswith(f"In memdash: {back}\n")

    refused = member_client.post(
        f"/apps/{app.pk}/settings/tracker/", {"new_issue_url": "javascript:{title}"}
    )
    assert refused.status_code == 302
    assert "github.com" in member_client.get(f"/apps/{app.pk}/settings/").content.decode()


def test_the_tracker_issue_is_recorded_in_the_triage(app, cluster, api_client):
    url = f"/api/v1/cycles/{cluster.pk}"
    issue = "https://github.com/acme/chat/issues/42"
    answer = api_client.patch(url, {"tracker_url": issue}, format="json")
    assert answer.status_code == 200 and answer.json()["tracker_url"] == issue
    assert TrackedIssue.objects.get().url == issue
    event = TriageEvent.objects.get()
    assert event.changes == [{"field": "tracker_url", "from": None, "to": issue}]
    bad = api_client.patch(url, {"tracker_url": "not a url"}, format="json")
    assert bad.status_code == 400
    cleared = api_client.patch(url, {"tracker_url": None}, format="json")
    assert cleared.json()["tracker_url"] is None and not TrackedIssue.objects.exists()
