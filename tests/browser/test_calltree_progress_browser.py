"""A call tree too large to build in the request (past MEMDASH_TREE_INLINE_ROWS, here 4 rows; the
snapshot of tests/calltree/conftest.tree_doc has 5) is built by a worker: the page shows a
progress bar while it asks again, then draws the tree (the inverted tree worked out in
tests/calltree/test_calltree_api.test_inverted). At 390 px the bar stays within the page. The
diff call tree of build compare does the same."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from memdash.allocations.reads.calltree.jobs import write_state
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.core.models import Build
from tests.calltree.conftest import tree_doc
from tests.calltree.test_calltree_tasks import job_of
from tests.compare.test_diff_tree_options import store_builds

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROOTS = "#calltree .ct-roots > .ct-node > .ct-row .ct-symbol"


def test_the_page_shows_progress_then_draws_the_tree(
    upload, member, logged_in_page, settings, tmp_path
):
    from playwright.sync_api import expect

    response = upload(tree_doc())
    assert response.json()["status"] == "done", response.json()
    sid = response.json()["snapshot"]["id"]
    settings.MEMDASH_TREE_INLINE_ROWS = 4
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    job = job_of(sid, CallTreeQuery(inverted=True))

    page = logged_in_page(member)
    page.goto(f"/snapshots/{sid}/calltree/?inverted=1")
    pending = page.locator("#calltree .pending")
    expect(pending).to_be_visible()
    expect(pending).to_have_text("Building the call tree: waiting for a worker…")
    expect(page.locator("#calltree")).to_have_attribute("aria-busy", "true")

    write_state(job.key, "running", 0.5)  # a worker half-way: the next question says so
    expect(pending).to_have_text("Building the call tree… 50 %")
    assert page.locator("#calltree .pending progress").evaluate("bar => bar.value") == 50
    page.screenshot(path=str(tmp_path / "progress-desktop.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    box = pending.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390
    page.screenshot(path=str(tmp_path / "progress-phone.png"), full_page=True)

    write_state(job.key, "queued")  # as the request left it: the worker finds it queued
    call_command("db_worker", batch=True, no_startup_delay=True, reload=False, verbosity=0)
    expect(page.locator("#calltree")).to_have_attribute("data-ready", "1")
    expect(pending).to_be_hidden()
    expect(page.locator(ROOTS)).to_have_text(
        ["-[MessageCell init]", "(no stack)", "malloc", "Chat + 0x1a2b"]
    )


def test_the_diff_tree_shows_progress_then_draws(upload, app, member, logged_in_page, settings):
    """Build compare of test_diff_tree_options' builds (three snapshots of two rows each): the
    inverted diff tree reads six trees, four of them past the 4 rows a request may build."""
    from playwright.sync_api import expect

    store_builds(upload)
    base, target = (Build.objects.get(version=v).pk for v in ("1.0", "2.0"))
    settings.MEMDASH_TREE_INLINE_ROWS = 4
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

    page = logged_in_page(member)
    page.goto(f"/apps/{app.pk}/compare/?base={base}&target={target}&inverted=1")
    pending = page.locator("#difftree .pending")
    expect(pending).to_have_text("Building the call trees: waiting for a worker…")
    call_command("db_worker", batch=True, no_startup_delay=True, reload=False, verbosity=0)
    expect(page.locator("#difftree")).to_have_attribute("data-ready", "1")
    expect(pending).to_be_hidden()
    roots = page.locator("#difftree .difftree-level > li[data-node] > .row .name")
    expect(roots).to_have_text(["malloc", "-[Cell init]"])


def test_top_functions_show_progress_while_a_worker_makes_them(
    upload, member, logged_in_page, settings, tmp_path
):
    """Top Functions of a tree past the budget are made by a worker (with the tree, here not
    built yet): the view says so while it asks again, then lists them (Malloc 48 Bytes' functions
    by self bytes, as test_calltree_tasks works them out: malloc 5,520 B, Chat + 0x1a2b 96 B)."""
    from playwright.sync_api import expect

    response = upload(tree_doc())
    sid = response.json()["snapshot"]["id"]
    settings.MEMDASH_TREE_INLINE_ROWS = 4
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

    page = logged_in_page(member)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"/snapshots/{sid}/calltree/?category=Malloc+48+Bytes#view=functions")
    status = page.locator("#calltree .ct-functions-status")
    expect(status).to_have_text("Waiting for a worker to make Top Functions")
    page.screenshot(path=str(tmp_path / "functions-waiting-desktop.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(tmp_path / "functions-waiting-phone.png"), full_page=True)

    call_command("db_worker", batch=True, no_startup_delay=True, reload=False, verbosity=0)
    view = page.locator("#calltree .ct-functions-view")
    expect(view).to_have_attribute("data-ready", "1")
    expect(view.locator("tbody tr .ct-symbol").first).to_have_text("malloc")
    expect(view.locator("tbody tr").first).to_contain_text("5.39 KiB")  # 5,520 B
    page.screenshot(path=str(tmp_path / "functions-made-phone.png"), full_page=True)
