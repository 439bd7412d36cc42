"""The demo's platform leak tools: Xcode's leaks joins the FBRetainCycleDetector cluster it
matches (its triage story intact, its weak reference never offered), its frames named by the
demo's debug files; LeakCanary's leaks of the Android app with their triage; a pasted exit-info."""

from __future__ import annotations

import pytest

from memdash.core.models import App
from memdash.cycles import demo as cycles_demo
from memdash.cycles.models import Cluster
from memdash.cycles.reads.clusters import reported_by
from memdash.foom.models import ProcessExit
from memdash.ingest.demo import debug_files as demo_symbols
from memdash.ingest.demo import leak_tools as demo_leak_tools
from memdash.ingest.demo import os_exits as demo_os
from memdash.leaks.models import LeakGroup, LeakReport, LeakTraceCluster
from memdash.triage.models import Status

pytestmark = pytest.mark.django_db


@pytest.fixture
def story(demo_context):
    ctx = demo_context
    demo_symbols.load(ctx)
    cycles_demo.load(ctx)
    demo_os.load_android(ctx)
    demo_leak_tools.load(ctx)
    return ctx


def test_the_xcode_report_joins_the_retain_cycle_cluster(story, member_client):
    ctx = story
    chat = Cluster.objects.get(app=ctx.app, key=["ChatDataSource", "ChatViewController"])
    tools = dict(reported_by(chat))
    assert tools["Xcode leaks"] == 4  # two loops in each of the two reports
    assert tools["memdash retain cycles"] > 0
    # the demo's story: fixed in 8.0.3, seen again in 8.0.4, reopened as a regression
    assert (chat.status, chat.regression) == (Status.OPEN, True)
    page = member_client.get(chat.get_absolute_url()).content.decode()
    weaken = page[page.index('id="weaken"') :].split("</p>")[0]
    assert "_delegate" not in weaken


def test_the_xcode_reports_are_grouped_and_named(story):
    ctx = story
    reports = LeakReport.objects.filter(app=ctx.app, tool="xcode-leaks").order_by("build__number")
    assert [(str(r.build), r.stated_allocations, r.stated_bytes) for r in reports] == [
        ("8.0.4 (104)", 16, 352 + 12 * 176),
        ("8.0.5 (105)", 4, 352),
    ]
    cache = LeakGroup.objects.get(app=ctx.app, title__startswith="ROOT LEAK: ChatImageCacheEntry")
    # the Chat image's offsets, named by the demo's debug files at ingest
    assert cache.title == "ROOT LEAK: ChatImageCacheEntry in -[ChatImageCache decodeImageData:]"
    assert (cache.occurrences, cache.bytes, str(cache.last_seen_build)) == (12, 2112, "8.0.4 (104)")
    assert reports[0].info["footprint"] == "312.4M"


def test_leakcanary_and_the_pasted_exit_info_on_android(story):
    android = App.objects.get(bundle_id="com.example.chat", platform="android")
    clusters = {c.title: c for c in LeakTraceCluster.objects.filter(app=android)}
    activity = clusters["ChatActivity via static ChatRepository.listeners"]
    assert (activity.status, activity.regression, str(activity.fixed_in_build)) == (
        Status.FIXED,
        False,
        "8.0.5 (105)",
    )
    assert (activity.occurrences, activity.builds) == (4, 2)
    fragment = clusters["RecyclerView via ConversationFragment.messageList"]
    assert (fragment.status, fragment.assignee) == (Status.OPEN, story.user)
    library = clusters["SettingsActivity via Activity$1.this$0"]
    assert library.library and library.occurrences == 6
    pasted = ProcessExit.objects.filter(app=android, device__device_key="QA-Pixel-9")
    assert sorted(pasted.values_list("pid", "verdict")) == [
        (29006, "normal"),
        (30412, "memory"),
        (31877, "memory"),
    ]
