"""The compare pages lead on: the builds they compare are links to the builds' pages, and the
gate's failures (and its unproven growth) open their category's row and diff call tree. On the
demo's snapshots: 8.0.3 → 8.0.4 fails the 5 % gate on ChatImageCache (see test_demo_story)."""

from __future__ import annotations

import random
from urllib.parse import quote

import pytest

from memdash.allocations import demo as snapshots_demo
from memdash.core import demo as core_demo
from memdash.core.writes import apps as core_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def ctx(member):
    app = core_services.get_or_create_app(core_demo.BUNDLE_ID, "ios", "Chat")
    builds = [
        core_services.get_or_create_build(app, version, number, f"c0ffee{i}")
        for i, (version, number) in enumerate(core_demo.BUILDS)
    ]
    devices = [core_services.get_or_create_device(app, *d) for d in core_demo.DEVICES]
    context = core_demo.DemoContext(
        app=app, builds=builds, devices=devices, user=member, rng=random.Random(4)
    )
    snapshots_demo.load(context)
    return context


def link(build) -> str:
    return f'<a href="{build.get_absolute_url()}" class="build-link">{build}</a>'


def test_build_compare_links_its_builds_and_gate_failures(member_client, ctx):
    base, target = ctx.builds[2], ctx.leaking_build
    url = f"/apps/{ctx.app.pk}/compare/"
    params = {"base": base.pk, "target": target.pk, "max_growth": "5%"}
    html = member_client.get(url, params).content.decode()
    heading = html.split("<h1>")[1].split("</h1>")[0]
    assert f"{link(base)} → {link(target)}" in heading
    gate = html.split('id="gate"')[1].split("</div>")[0]
    # the row of ChatImageCache and its diff tree: the page's query with the category
    row = (
        f"?base={base.pk}&amp;target={target.pk}&amp;max_growth={quote('5%')}"
        f"&amp;category={ctx.leaking_category}#difftree"
    )
    assert f'<li><a href="{row}" title="its row and diff call tree">ChatImageCache</a>:' in gate


def test_generation_diff_links_the_snapshots_build(member_client, ctx):
    snapshot = next(s for s in ctx.snapshots if s.build == ctx.leaking_build)
    html = member_client.get(f"/apps/{ctx.app.pk}/snapshots/{snapshot.pk}/generation-diff/").content
    heading = html.decode().split("<h1>")[1].split("</h1>")[0]
    assert f"build {link(ctx.leaking_build)}" in heading
