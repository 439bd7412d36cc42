"""In a real browser: logging in through the throttled form, the lockout page, and removing a
member after the confirmation dialog."""

from __future__ import annotations

import os

import pytest

from memdash.core.models import Membership
from memdash.core.writes import apps as services

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # the live server and Playwright share a thread

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_load_state()


def test_remove_a_member_through_the_dialog(live_server, browser, app, member, django_user_model):
    plain = django_user_model.objects.create_user("plain")
    services.add_member(app, plain, Membership.MEMBER)
    page = browser.new_page()
    log_in(page, live_server.url, "member", "member-pass-123")
    page.goto(f"{live_server.url}/apps/{app.pk}/settings/")
    row = page.locator("#members ~ .table-scroll tr", has_text="plain")
    row.locator("button", has_text="Remove").click()
    dialog = page.locator("dialog.confirm-dialog")
    assert "Remove plain from Chat?" in dialog.text_content()
    dialog.locator("button", has_text="Remove the member").click()
    page.wait_for_selector("text=plain is no longer a member of Chat.")
    assert list(Membership.objects.values_list("user__username", flat=True)) == ["member"]


def test_the_lockout_page(live_server, browser, settings, member):
    settings.AXES_FAILURE_LIMIT = 2
    page = browser.new_page()
    log_in(page, live_server.url, "member", "wrong")
    log_in(page, live_server.url, "member", "wrong")
    log_in(page, live_server.url, "member", "member-pass-123")
    assert "try again in 15 min" in page.text_content("#login-error")  # 900 s, the default
    assert page.url.endswith("/login/")
