"""A member chooses the link to weaken among the strong links of a cluster's minimal loop, the
computed one offered first: stored, shown on the page and in the API, in the triage history; a
reference that retains nothing (`__weak`) is never offered."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from memdash.core.models import Membership
from memdash.core.writes import apps as core_services
from memdash.cycles.logic.clustering import (
    CHOSEN_REASON,
    canonical_cycle,
    canonical_with_ownership,
    chosen_link,
    link_to_weaken,
    links_to_offer,
    reference_from_json,
    reference_text,
)
from memdash.cycles.logic.parse import ParsedCycles
from memdash.cycles.models import DEFAULT_SYSTEM_PREFIXES, Cluster
from memdash.cycles.writes import store_cycle_report
from tests.cycles.helpers import T0, builds, store

# B -_a-> A -_delegate-> B: the references are B._a -> A and A._delegate -> B (a back-reference)
PAIR = (("A", ("_a",)), ("B", ("_delegate",)))
DELEGATE = ("A", ("_delegate",), "B")
OWNER = ("B", ("_a",), "A")


def test_the_computed_link_is_offered_first_then_the_other_strong_links():
    loop = canonical_cycle(PAIR)
    computed = link_to_weaken(loop, [loop], DEFAULT_SYSTEM_PREFIXES)
    assert computed is not None and computed.reference == DELEGATE
    offered = links_to_offer(loop, ("", ""), computed)
    assert [link.reference for link in offered] == [DELEGATE, OWNER]
    assert offered[0] is computed
    # no choice, or a choice the loop no longer has: the computed one
    assert chosen_link(offered, None) is computed
    assert chosen_link(offered, ("X", ("_y",), "Z")) is computed
    mine = chosen_link(offered, OWNER)
    assert mine is not None and mine.reference == OWNER and mine.reason == CHOSEN_REASON
    assert chosen_link(offered, DELEGATE) is computed  # agreeing keeps the computed reason
    assert chosen_link([], OWNER) is None


def test_a_loop_through_a_weak_reference_offers_nothing():
    loop, ownership = canonical_with_ownership(PAIR, ("strong", "weak"))
    computed = link_to_weaken(loop, [loop], DEFAULT_SYSTEM_PREFIXES, ownership)
    assert computed is None and links_to_offer(loop, ownership, computed) == []


def test_stored_references_read_back_and_read_as_text():
    assert reference_from_json(["B", ["_a"], "A"]) == OWNER
    for bad in (None, ["B", "_a", "A"], ["B", [1], "A"], ["B", ["_a"]], "B._a"):
        assert reference_from_json(bad) is None
    assert reference_text(OWNER) == "B._a → A"
    assert reference_text(("__NSMallocBlock__", (), "C")) == "__NSMallocBlock__.(unnamed) → C"


@pytest.fixture
def cluster(app) -> Cluster:
    (b1,) = builds(app, 1)
    store(app, b1, [PAIR] * 3)
    return Cluster.objects.get(app=app, key=["A", "B"])


def position_of(cluster: Cluster, reference) -> int:
    loop = canonical_cycle(PAIR)
    return next(i for i, (cls, via) in enumerate(loop) if (loop[i - 1][0], via, cls) == reference)


@pytest.mark.django_db
def test_a_member_chooses_the_link_on_the_page(member_client, app, cluster):
    url = cluster.get_absolute_url()
    html = member_client.get(url).content.decode()
    form = html[
        html.index('id="weaken-form"') : html.index("</form>", html.index('id="weaken-form"'))
    ]
    options = [part.split(">", 1)[1].split("<")[0] for part in form.split("<option")[1:]]
    assert options == ["A._delegate → B (computed)", "B._a → A"]
    chosen = position_of(cluster, OWNER)
    response = member_client.post(url, {"weaken-link": str(chosen)})
    assert response.status_code == 302 and response["Location"].endswith("#weaken")
    cluster.refresh_from_db()
    assert cluster.link_to_weaken == ["B", ["_a"], "A"]
    html = member_client.get(url).content.decode()
    weaken = html[html.index('id="weaken"') : html.index("</p>", html.index('id="weaken"'))]
    assert '<span class="weak-ref">_a</span> → A' in weaken and f"({CHOSEN_REASON})" in weaken
    assert '<span class="triage-field">Link to weaken</span> computed → B._a → A' in html
    # the drawing marks the chosen one
    assert html.count('data-weaken="1"') == 1
    assert member_client.post(url, {"weaken-link": "9"}).status_code == 400
    # back to the computed one
    member_client.post(url, {"weaken-link": str(position_of(cluster, DELEGATE))})
    cluster.refresh_from_db()
    assert cluster.link_to_weaken is None


@pytest.mark.django_db
def test_a_member_chooses_the_link_through_the_api(api_client, app, cluster):
    body = api_client.get(f"/api/v1/cycles/{cluster.pk}").json()
    assert body["link_to_weaken"]["held"] == "B" and body["link_to_weaken_chosen"] is False
    assert [(o["holder"], o["via"], o["held"]) for o in body["links_to_offer"]] == [
        ("A", ["_delegate"], "B"), ("B", ["_a"], "A"),
    ]  # fmt: skip
    url = f"/api/v1/cycles/{cluster.pk}/link-to-weaken"
    owner = body["links_to_offer"][1]["position"]
    response = api_client.put(url, {"position": owner}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["link_to_weaken"] == {
        "position": owner, "holder": "B", "via": ["_a"], "held": "A", "reason": CHOSEN_REASON,
    }  # fmt: skip
    assert response.json()["link_to_weaken_chosen"] is True
    for bad in ({"position": "1"}, {"position": True}, {}):
        refused = api_client.put(url, bad, format="json")
        assert refused.status_code == 400 and "position" in refused.json()["fields"]
    absent = api_client.put(url, {"position": 5}, format="json")  # no such link: as any id
    assert absent.status_code == 404 and absent.json()["path"] == "position"
    back = api_client.put(url, {"position": None}, format="json").json()
    assert back["link_to_weaken"]["held"] == "B" and back["link_to_weaken_chosen"] is False
    assert [e.changes[0]["to"] for e in cluster.triage_events.order_by("id")] == [
        "B._a → A", "computed",
    ]  # fmt: skip


@pytest.mark.django_db
def test_viewers_do_not_choose(app, cluster, django_user_model):
    viewer = django_user_model.objects.create_user("viewer")
    core_services.add_member(app, viewer, Membership.VIEWER)
    web = Client()
    web.force_login(viewer)
    page = web.get(cluster.get_absolute_url()).content.decode()
    assert 'id="weaken"' in page and 'id="weaken-form"' not in page
    assert web.post(cluster.get_absolute_url(), {"weaken-link": "0"}).status_code == 403
    api = APIClient()
    api.force_authenticate(viewer)
    url = f"/api/v1/cycles/{cluster.pk}/link-to-weaken"
    assert api.put(url, {"position": 0}, format="json").status_code == 403
    cluster.refresh_from_db()
    assert cluster.link_to_weaken is None


@pytest.mark.django_db
def test_a_weak_loop_has_no_link_to_choose(api_client, member_client, app):
    (b1,) = builds(app, 1)
    parsed = ParsedCycles(cycles=[PAIR], dropped=0, ownership=[("strong", "weak")])
    store_cycle_report(app, b1, None, T0, parsed, source_format="xcode.leaks")
    cluster = Cluster.objects.get(app=app, key=["A", "B"])
    body = api_client.get(f"/api/v1/cycles/{cluster.pk}").json()
    assert body["link_to_weaken"] is None and body["links_to_offer"] == []
    url = f"/api/v1/cycles/{cluster.pk}/link-to-weaken"
    refused = api_client.put(url, {"position": 0}, format="json")
    assert refused.status_code == 404 and "none" in refused.json()["error"]
    assert 'id="weaken-form"' not in member_client.get(cluster.get_absolute_url()).content.decode()
