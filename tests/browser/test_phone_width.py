"""At 390 px (a phone), no page scrolls sideways: every kind of page of the demo, drawn to the end
(charts and call trees included), is no wider than the screen; wide tables scroll in their own
box. The same walk checks that hostile names in the data stay text: a category and a frame
that are HTML open no dialog and make no link anywhere they are drawn (tables, charts, the call
tree), and that no page breaks its Content-Security-Policy (no inline script, nothing from
elsewhere): every page draws fully under it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from memdash.allocations import demo as allocations_demo
from memdash.allocations.models import Snapshot
from memdash.allocations.writes.snapshots import store_snapshot_document
from memdash.cycles.models import Cluster
from memdash.foom.models import MetricKitDiagnostic, Session
from memdash.ingest.models import Upload
from memdash.leaks.models import LeakGroup, LeakReport, LeakTraceAnalysis, LeakTraceCluster
from memdash.site import demo as site_demo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
HOSTILE_CATEGORY = "<a href=\"https://evil.example/\">x</a><script>alert('category')</script>"
HOSTILE_FRAME = "<img src=x onerror=alert('frame')>"
DRAWN = """() => [...document.querySelectorAll('[data-chart]')].every(
    (div) => div.dataset.drawn && div.querySelector('.main-svg'))
  && [...document.querySelectorAll('#calltree')].every((tree) => tree.dataset.ready === '1')"""


def hostile_snapshot(ctx: Any) -> Snapshot:
    """A snapshot of the demo's first build whose largest category and one frame are HTML."""
    build, device = ctx.builds[0], ctx.devices[0]
    at = ctx.build_date(build) + timedelta(hours=20)
    doc = allocations_demo.snapshot_document(ctx, build, device, at)
    doc["frames"][4] = {"symbol": HOSTILE_FRAME, "image": 0}
    for row in doc["allocations"]:
        if row["category"] == "ChatImageCache":
            row["category"] = HOSTILE_CATEGORY
    result = store_snapshot_document(doc, ctx.meta_for(build, device))
    return Snapshot.objects.get(pk=result.object_id)


def page_urls(ctx: Any, snapshot: Snapshot) -> dict[str, str]:
    """One URL of every kind of page, with the demo's objects."""
    app, build = ctx.app.pk, ctx.leaking_build.pk
    other = Snapshot.objects.filter(app=ctx.app).exclude(pk=snapshot.pk).first()
    session = Session.objects.filter(app=ctx.app, classification="foom").first()
    cluster = Cluster.objects.filter(app=ctx.app, is_current=True).first()
    group = LeakGroup.objects.filter(app=ctx.app).first()
    report = LeakReport.objects.filter(app=ctx.app).first()
    upload = Upload.objects.filter(app=ctx.app).first()
    xcode = LeakReport.objects.filter(app=ctx.app, tool="xcode-leaks").first()
    trace = LeakTraceCluster.objects.first()
    analysis = LeakTraceAnalysis.objects.first()
    diagnostic = MetricKitDiagnostic.objects.filter(app=ctx.app).first()
    assert other and session and cluster and group and report and upload and diagnostic
    assert xcode and trace and analysis
    calltree = reverse("snapshots:calltree", args=[snapshot.pk])
    return {
        "app list": reverse("core:app_list"),
        "builds": reverse("snapshots:app_detail", args=[app]),
        "build": reverse("snapshots:build_detail", args=[app, build]),
        "build call tree": reverse("snapshots:build_calltree", args=[app, build]),
        "snapshot": reverse("snapshots:snapshot_detail", args=[snapshot.pk]),
        "call tree": calltree,
        "call tree of a category": f"{calltree}?" + urlencode({"category": HOSTILE_CATEGORY}),
        "generations": reverse("snapshots:generations", args=[snapshot.pk]),
        "debug files": reverse("snapshots:debug_files", args=[app]),
        "missing symbols": reverse("snapshots:symbols", args=[snapshot.pk]),
        "build symbols": reverse("snapshots:build_symbols", args=[app, build]),
        "trends": reverse("compare:trends", args=[app]),
        "build compare": reverse("compare:build_compare", args=[app]),
        "snapshot diff": reverse("compare:snapshot_diff", args=[app])
        + f"?base={other.pk}&target={snapshot.pk}",
        "generation diff": reverse("compare:generation_diff", args=[app, snapshot.pk]),
        "foom": reverse("foom:app_foom", args=[app]),
        "build foom": reverse("foom:build_foom", args=[app, build]),
        "foom run": reverse("foom:session_detail", args=[app, session.pk]),
        "os exits": reverse("foom:os_exits", args=[app]),
        "metrickit diagnostic": reverse("foom:diagnostic", args=[app, diagnostic.pk]),
        "cycles": reverse("cycles:cluster_list", args=[app]),
        "cycle": reverse("cycles:cluster_detail", args=[app, cluster.pk]),
        "cycle settings": reverse("cycles:settings", args=[app]),
        "leaks": reverse("leaks:group_list", args=[app]),
        "leak group": reverse("leaks:group_detail", args=[app, group.pk]),
        "leak report": reverse("leaks:report_detail", args=[app, report.pk]),
        "xcode leaks report": reverse("leaks:report_detail", args=[app, xcode.pk]),
        "leakcanary leaks": reverse("leaks:trace_list", args=[trace.app_id]),
        "leakcanary leak": reverse("leaks:trace_detail", args=[trace.app_id, trace.pk]),
        "leakcanary analysis": reverse("leaks:trace_analysis", args=[analysis.app_id, analysis.pk]),
        "churn": reverse("churn:app_churn", args=[app]),
        "uploads": reverse("ingest:upload_list", args=[app]),
        "all uploads": reverse("ingest:all_uploads"),
        "upload": reverse("ingest:upload_detail", args=[upload.pk]),
        "settings": reverse("site:app_settings", args=[app]),
        "tokens": reverse("core:tokens"),
    }


# Every CSP violation a page reports, kept on the window for the walk to read.
RECORD_VIOLATIONS = """window.__violations = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__violations.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline')));"""
# A link the hostile name would make (a link of ours may carry the name in its query string).
# (`*|href`: plotly's links in SVG carry `xlink:href`).
LINKS_OUT = "document.querySelectorAll('a[*|href^=\"https://evil.example\"]').length"


def width_of(page: Any, url: str) -> int:
    page.goto(url)
    page.wait_for_function(DRAWN)
    return page.evaluate("document.documentElement.scrollWidth")


def test_no_page_is_wider_than_a_phone(browser, live_server, logged_in_page):
    ctx = site_demo.load_demo(verbosity=0)
    assert ctx is not None
    snapshot = hostile_snapshot(ctx)
    urls = page_urls(ctx, snapshot)

    page = logged_in_page(ctx.user)
    page.set_viewport_size(PHONE)
    dialogs: list[str] = []

    def opened(dialog: Any) -> None:
        dialogs.append(f"{page.url}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", opened)
    page.add_init_script(RECORD_VIOLATIONS)
    too_wide, violations, links_out = {}, {}, {}
    for name, url in {**urls, "api docs": "/api/v1/docs/"}.items():
        if (width := width_of(page, url)) > 390:
            too_wide[name] = width
        if found := page.evaluate("window.__violations"):
            violations[name] = found
        if count := page.evaluate(LINKS_OUT):
            links_out[name] = count
    assert not too_wide, too_wide
    assert not dialogs, dialogs
    assert not violations, violations
    assert not links_out, links_out
    # The API docs drew under the policy (their script is a file of its own).
    page.goto("/api/v1/docs/")
    page.wait_for_selector("#swagger-ui .opblock")
    # The hostile names were drawn, as text.
    page.goto(urls["snapshot"])
    assert page.locator("#statistics a.category", has_text=HOSTILE_CATEGORY).count() == 1

    # The login page, signed out.
    context = browser.new_context(base_url=live_server.url, viewport=PHONE)
    login = context.new_page()
    assert width_of(login, reverse("login")) <= 390
    context.close()


def test_a_new_key_copies_and_revoking_it_asks_in_a_dialog(logged_in_page, member, app):
    """The new secret's Copy button puts it on the clipboard; Revoke asks in a dialog (which a
    phone shows whole) before the second POST."""
    from playwright.sync_api import expect

    page = logged_in_page(member)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.set_viewport_size(PHONE)
    page.goto(reverse("site:app_settings", args=[app.pk]))
    page.locator("#id_name").fill("CI")
    page.get_by_role("button", name="Create a key").click()
    secret = page.locator("#new-secret").inner_text()
    assert secret.startswith("mdk_")
    page.get_by_role("button", name="Copy", exact=True).click()
    expect(page.locator("button.copy-secret")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == secret

    page.get_by_role("button", name="Revoke", exact=True).click()
    dialog = page.locator("dialog.confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Uploads with it are refused from then on")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = dialog.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("td", has_text="revoked")).to_have_count(0)  # nothing was sent
    page.get_by_role("button", name="Revoke", exact=True).click()
    dialog.get_by_role("button", name="Revoke the key").click()
    expect(page.locator(".messages")).to_contain_text("The key is revoked")
    expect(page.locator("td", has_text="revoked")).to_have_count(1)
