"""The demo's story, found by each compare tool: ChatImageCache grows generation after
generation in 8.0.4, is the top grower from 8.0.3 to 8.0.4, the gate fails 8.0.4 against 8.0.3
and passes 8.0.5 against 8.0.3.

`load_demo` loads every domain's demo (a few tens of seconds); this loads the snapshots
domain's part, which is what compare reads, with the demo's own context and generator.
"""

from __future__ import annotations

import random

import pytest
from django.core.management import call_command

from memdash.allocations import demo as snapshots_demo
from memdash.core import demo as core_demo
from memdash.core import services as core_services

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


def test_grows_generation_after_generation(api_client, ctx):
    leaking = [s for s in ctx.snapshots if s.build == ctx.leaking_build]
    assert leaking
    for snapshot in leaking:
        marks = list(snapshot.generations.order_by("index").values_list("index", flat=True))
        for before, after in zip(marks, marks[1:], strict=False):
            body = api_client.get(
                "/api/v1/diff",
                {"base": f"generation:{snapshot.pk}:{before}",
                 "target": f"generation:{snapshot.pk}:{after}"},
            ).json()  # fmt: skip
            top = body["rows"][0]
            # every generation keeps 6 more cache images of 256 KiB than the one before
            assert (top["category"], top["status"]) == (ctx.leaking_category, "grown")
            assert (top["delta_count"], top["delta_bytes"]) == (6, 6 * 256 * 1024)


def test_top_grower_between_builds_3_and_4(api_client, ctx):
    app = ctx.app
    body = api_client.get(f"/api/v1/apps/{app.pk}/compare",
                          {"base": "8.0.3:103", "target": "8.0.4:104"}).json()  # fmt: skip
    top = body["rows"][0]
    assert top["category"] == ctx.leaking_category
    # 8 images kept before the first mark, then 6 + 12 + 18 + 24 more: 68 x 256 KiB
    assert (top["base_bytes_median"], top["target_bytes_median"]) == (8 * 262144, 68 * 262144)
    assert top["significant"] is True  # 4 against 4 snapshots, separated: p = 2/70
    diff = api_client.get(
        "/api/v1/diff", {"base": "build:8.0.3:103", "target": "build:8.0.4:104", "app": app.pk}
    ).json()
    assert diff["summary"]["top_grower"] == ctx.leaking_category


def test_gate_fails_4_against_3_and_passes_5_against_3(ctx, capsys):
    with pytest.raises(SystemExit) as exit_info:
        call_command("memdash_check", "--app", ctx.app.bundle_id, "--base", "8.0.3:103",
                     "--target", "8.0.4:104", "--max-growth", "5%")  # fmt: skip
    assert exit_info.value.code == 1
    report = capsys.readouterr().out
    assert f"FAIL {ctx.leaking_category}: 2.00 MiB -> 17.00 MiB" in report
    call_command("memdash_check", "--app", ctx.app.bundle_id, "--base", "8.0.3:103",
                 "--target", "8.0.5:105", "--max-growth", "5%")  # fmt: skip
    assert "result: PASS" in capsys.readouterr().out


def test_gate_through_the_api_on_the_demo(api_client, ctx):
    url = f"/api/v1/apps/{ctx.app.pk}/compare"
    failing = api_client.get(url, {"base": "8.0.3:103", "target": "8.0.4:104",
                                   "max_growth": "5%"}).json()  # fmt: skip
    assert failing["pass"] is False
    assert ctx.leaking_category in {f["category"] for f in failing["failures"]}
    passing = api_client.get(url, {"base": "8.0.3:103", "target": "8.0.5:105",
                                   "max_growth": "5%"}).json()  # fmt: skip
    assert passing["pass"] is True and passing["failures"] == []
