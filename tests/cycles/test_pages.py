"""The retain-cycle pages: the cluster list (sort, filters, system toggle), a cluster, settings."""

from __future__ import annotations

import re

import pytest

from memdash.core.writes import apps as core_services
from memdash.cycles.models import Cluster
from memdash.cycles.reads.clusters import own_system_prefixes
from tests.cycles.helpers import builds, loop, store

pytestmark = pytest.mark.django_db

UIKIT = (("UIView", ("_view",)), ("UIWindow", ("_window",)))


@pytest.fixture
def stored(app):
    b1, b2, b3 = builds(app, 3)
    # A-B: 3 occurrences on 1 device in 1 build; C-D: 2 on 2 devices in 2 builds;
    # E-F: 1, first seen in build 3 (the newest).
    store(app, b1, [loop("A", "B")] * 3 + [UIKIT], device_key="D-1", dropped=1)
    store(app, b1, [loop("C", "D")], device_key="D-2")
    store(app, b2, [loop("C", "D")], device_key="D-3")
    store(app, b3, [loop("E", "F")], device_key="D-1")
    return b1, b2, b3


def keys_in(content: bytes) -> list[str]:
    """The clusters' keys in the order of the table rows."""
    return re.findall(r'<a href="/apps/\d+/cycles/\d+/" class="mono">([^<]+)</a>', content.decode())


def test_list_sorts(member_client, app, stored):
    url = f"/apps/{app.pk}/cycles/"
    assert keys_in(member_client.get(url).content) == ["A → B", "C → D", "E → F"]
    assert keys_in(member_client.get(url, {"sort": "devices"}).content)[0] == "C → D"
    assert keys_in(member_client.get(url, {"sort": "builds"}).content)[0] == "C → D"
    assert keys_in(member_client.get(url, {"sort": "newest"}).content)[0] == "E → F"


def test_list_hides_system_clusters_unless_asked(member_client, app, stored):
    url = f"/apps/{app.pk}/cycles/"
    page = member_client.get(url)
    assert "UIView → UIWindow" not in keys_in(page.content)
    assert b"1 transient cycle with freed objects dropped" in page.content
    assert "UIView → UIWindow" in keys_in(member_client.get(url, {"system": "on"}).content)


def test_list_filters(member_client, app, member, stored):
    b1, b2, b3 = stored
    url = f"/apps/{app.pk}/cycles/"
    cd = Cluster.objects.get(key=["C", "D"])
    cd.change_triage(member, status="open", assignee=member)
    assert keys_in(member_client.get(url, {"status": "open"}).content) == ["C → D"]
    assert keys_in(member_client.get(url, {"status": ["new", "open"]}).content) == [
        "A → B",
        "C → D",
        "E → F",
    ]
    assert keys_in(member_client.get(url, {"assignee": str(member.pk)}).content) == ["C → D"]
    assert keys_in(member_client.get(url, {"assignee": "none"}).content) == ["A → B", "E → F"]
    # Builds 2..3: A-B was only in build 1; C-D counts its one occurrence in build 2.
    ranged = member_client.get(url, {"build_from": b2.pk, "build_to": b3.pk})
    assert keys_in(ranged.content) == ["C → D", "E → F"]
    assert keys_in(member_client.get(url, {"build_to": b1.pk}).content) == ["A → B", "C → D"]


def test_detail_draws_the_loop_and_escapes_names(member_client, app):
    (b1,) = builds(app, 1)
    evil = (("<script>alert(1)</script>", ("_x",)), ("Owner", ('_"onload=',)))
    store(app, b1, [evil])
    cluster = Cluster.objects.get()
    page = member_client.get(cluster.get_absolute_url())
    assert page.status_code == 200
    html = page.content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert '_"onload=' not in html and "_&quot;onload=" in html
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert svg.count("<rect") == 2 and svg.count("marker-end") == 2
    assert 'id="triage"' in html and "csrfmiddlewaretoken" in html


def test_detail_shows_member_cycles_and_chart(member_client, app, stored):
    cluster = Cluster.objects.get(key=["C", "D"])
    page = member_client.get(cluster.get_absolute_url())
    html = page.content.decode()
    assert 'id="cycle-occurrences-data"' in html
    assert "Member cycles" in html and "_c" in html


def test_triage_through_the_page(member_client, app, member, stored):
    (b4,) = [b for b in builds(app, 4) if b.version == "8.0.4"]  # no cycles stored in 8.0.4
    cluster = Cluster.objects.get(key=["A", "B"])
    response = member_client.post(
        cluster.get_absolute_url(),
        {
            "triage-status": "fixed",
            "triage-assignee": str(member.pk),
            "triage-fixed_in_build": str(b4.pk),
            "triage-notes": "captured self",
        },
    )
    assert response.status_code == 302
    cluster.refresh_from_db()
    assert (cluster.status, cluster.assignee, cluster.fixed_in_build) == ("fixed", member, b4)
    page = member_client.get(cluster.get_absolute_url()).content.decode()
    assert '<span class="triage-field">Status</span> new → fixed' in page
    assert "triage-override" not in page  # offered only once a fix is refused
    bad = member_client.post(cluster.get_absolute_url(), {"triage-status": "closed"})
    assert bad.status_code == 400


def test_page_refuses_a_fix_the_data_contradicts_unless_overridden(member_client, app, stored):
    b1, _b2, _b3 = stored
    cluster = Cluster.objects.get(key=["A", "B"])
    fix = {"triage-status": "fixed", "triage-fixed_in_build": str(b1.pk)}
    refused = member_client.post(cluster.get_absolute_url(), fix)
    assert refused.status_code == 400
    html = refused.content.decode()
    # 8.0.1 has the A-B loop three times
    assert "8.0.1 (101) still has 3 occurrences of this item" in html
    assert 'class="triage-override"' in html
    assert "Fixed despite 3 occurrences in 8.0.1 (101)" in html
    cluster.refresh_from_db()
    assert cluster.status == "new" and not cluster.triage_events.exists()
    saved = member_client.post(cluster.get_absolute_url(), {**fix, "triage-override": "on"})
    assert saved.status_code == 302
    cluster.refresh_from_db()
    assert (cluster.status, cluster.fixed_in_build) == ("fixed", b1)
    page = member_client.get(cluster.get_absolute_url()).content.decode()
    history = page[page.index('<ul class="triage-history">') :]
    assert '<span class="triage-field">Override</span> — → fixed despite 3 occurrences' in history


def test_settings_change_reclusters(member_client, app):
    (b1,) = builds(app, 1)
    store(app, b1, [loop("MDCache", "Owner"), loop("MDStore", "Owner")])
    url = f"/apps/{app.pk}/cycles/settings/"
    assert member_client.get(url).status_code == 200
    response = member_client.post(url, {"prefixes": "NS\nUI, MD"})
    assert response.status_code == 302
    app.refresh_from_db()
    assert own_system_prefixes(app) == ["NS", "UI", "MD"]
    assert [c.key for c in Cluster.objects.filter(is_current=True)] == [["Owner"]]
    bad = member_client.post(url, {"prefixes": "NS <b>"})
    assert bad.status_code == 400 and b"Not a class-name prefix" in bad.content


def test_unknown_cluster_is_404(member_client, app):
    core_services.get_or_create_build(app, "1")
    assert member_client.get(f"/apps/{app.pk}/cycles/999/").status_code == 404
