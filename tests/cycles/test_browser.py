"""Triage a cluster through the page in a real browser: assign it, mark it fixed."""

from __future__ import annotations

import os

import pytest

from memdash.cycles.models import Cluster
from memdash.triage.models import TriageEvent
from tests.cycles.helpers import builds, store

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # the live server and Playwright share a thread

BLOCK = ("__NSMallocBlock__", ("_onUpdate",))
CHAT = (("ChatViewController", ()), ("ChatDataSource", ("_dataSource",)), BLOCK)


@pytest.fixture
def browser_page(browser):
    return browser.new_page()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_assign_and_mark_fixed_through_the_page(live_server, browser_page, app, member):
    b1, b2, b3 = builds(app, 3)
    store(app, b1, [CHAT])
    store(app, b2, [CHAT], device_key="D-2")
    cluster = Cluster.objects.get()
    page = browser_page

    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "member")
    page.fill("input[name=password]", "member-pass-123")
    page.click("button[type=submit]")

    page.goto(f"{live_server.url}/apps/{app.pk}/cycles/")
    page.click("text=ChatDataSource → ChatViewController")
    page.wait_for_url(f"**/apps/{app.pk}/cycles/{cluster.pk}/")
    assert page.locator("svg.cycle-loop rect").count() == 3  # two app classes and the block
    assert page.text_content("[data-testid=triage-status]").strip() == "new"

    page.select_option("#id_triage-assignee", label="member")
    page.select_option("#id_triage-status", "fixed")
    page.select_option("#id_triage-fixed_in_build", label=str(b3))
    page.fill("#id_triage-notes", "The _onUpdate block captured the controller; weakified.")
    page.click("button[name=triage-save]")
    page.wait_for_selector("text=Triage saved.")

    assert page.text_content("[data-testid=triage-status]").strip() == "fixed"
    assert page.text_content("[data-testid=triage-assignee]").strip() == "member"
    assert page.text_content("[data-testid=triage-fixed-in]").strip() == str(b3)
    assert "Status new → fixed" in page.text_content(".triage-history")

    cluster.refresh_from_db()
    assert (cluster.status, cluster.assignee, cluster.fixed_in_build) == ("fixed", member, b3)
    assert TriageEvent.objects.filter(actor=member).count() == 1
