"""A FOOM run's rule is named by what it means on the pages ("Killed in foreground, no other
cause", not "15"); the API keeps the number and adds the name; active time reads as a duration;
times show their zone."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memdash.foom.logic.classify import RULE_NAMES, RULES
from memdash.foom.models import Session
from tests.foom.helpers import ago, ended, run, sessions_doc

pytestmark = pytest.mark.django_db


def test_every_rule_has_a_short_name():
    assert set(RULE_NAMES) == set(RULES)
    assert all(0 < len(name) <= 40 for name in RULE_NAMES.values())
    assert len(set(RULE_NAMES.values())) == len(RULE_NAMES)


@pytest.fixture
def foom_run(upload):
    """A FOOM (rule 15) active for 1,061,000 ms: 17 min 41 s."""
    t = ago(days=3)
    end = ended(active_for_ms=1_061_000, memory_warnings=3)
    doc = sessions_doc(run("foom-1", t, end=end), run("next-1", ago(days=2)))
    assert upload(doc).status_code == 202
    return Session.objects.get(session_id="foom-1")


def test_pages_name_the_rule_and_read_the_time(member_client, app, foom_run):
    assert foom_run.rule == 15
    name = "Killed in foreground, no other cause"
    html = member_client.get(foom_run.get_absolute_url()).content.decode()
    assert name in html and "rule 15 (none of the above)" in html
    assert "active for 17 min 41 s" in html and "1,061,000" not in html
    assert " UTC</td>" in html  # started, last seen: with their zone
    build_page = member_client.get(
        reverse("foom:build_foom", args=[app.pk, foom_run.build_id])
    ).content.decode()
    assert f'<td title="rule 15: none of the above">{name}</td>' in build_page


def test_api_keeps_the_number_and_adds_the_name(api_client, foom_run):
    body = api_client.get("/api/v1/sessions/foom-1").json()
    assert (body["rule"], body["rule_text"]) == (15, "none of the above")
    assert body["rule_name"] == "Killed in foreground, no other cause"
