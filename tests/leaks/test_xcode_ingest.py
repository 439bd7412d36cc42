"""Xcode's `leaks` reports through the upload doors: leak groups by stack or tree, bytes and
counts as the report states them, footprint with the report, every ROOT CYCLE a retain cycle
clustered with FBRetainCycleDetector's (one cluster, one triage; a `__weak` reference never the
one to weaken), unnamed frames named by the app's debug files, refusals that store nothing."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from memdash.cycles.models import CanonicalCycle, Cluster, CycleReport
from memdash.ingest.models import Upload
from memdash.leaks.models import LeakGroup, LeakRecord, LeakReport
from memdash.symbols.writes import process_debug_files, receive_debug_files
from memdash.triage.models import Status

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[1] / "data"
CHAT_UUID = "9F0E2A4F-1B2C-4D3E-8F4A-5B6C7D8E9F01"


def xcode(name: str) -> bytes:
    return (DATA / "xcode-leaks" / name).read_bytes()


def send(upload, body: bytes, query: str = "build_version=8.0.4&build_number=104&device_id=D-1"):
    return upload(body, content_type="text/plain", query=query)


def done(response) -> dict:
    body = response.json()
    assert response.status_code == 202 and body["status"] == "done", body
    return body


def test_a_report_in_the_tree_form(upload, app):
    body = done(send(upload, xcode("memoryleakscheck_cycle.txt")))
    assert body["format"] == "xcode.leaks"
    # 4 roots: the cycle (in no leak group) and 3 HomeViewModel leaks (one group, by its tree)
    assert body["counts"] == {
        "reports": 1, "records": 4, "groups": 1, "new_groups": 1, "reopened": 0, "cycles": 1,
        "cycle_clusters": 1,
    }  # fmt: skip
    report = LeakReport.objects.get()
    assert (report.tool, report.source_format) == ("xcode-leaks", "xcode.leaks")
    assert (report.stated_bytes, report.stated_allocations) == (208, 5)
    assert (report.unreachable_bytes, report.listed_bytes) == (208, 208)
    group = LeakGroup.objects.get()
    assert group.title == "ROOT LEAK: HomeViewModel" and group.by_shape
    assert (group.occurrences, group.bytes, group.allocations) == (3, 144, 3)
    cycle = LeakRecord.objects.get(group__isnull=True)
    cluster = Cluster.objects.get()
    assert cycle.detail["cycle"] is True and cycle.detail["cycle_clusters"] == [cluster.pk]
    assert cluster.key == ["Apartment", "Person"]
    assert CycleReport.objects.get().source_format == "xcode.leaks"


def test_the_build_from_the_reports_header(upload, app):
    done(send(upload, xcode("handwritten_stacks_and_cycles.txt"), query="device_id=D-1"))
    report = LeakReport.objects.get()
    # `Version: 8.0.4 (104)`; `Date/Time: 2026-10-24 14:05:11.204 +0000`
    assert (report.build.version, report.build.number) == ("8.0.4", "104")
    assert report.captured_at.isoformat() == "2026-10-24T14:05:11.204000+00:00"
    # without a build anywhere, refused at build_version
    refused = send(upload, xcode("memoryleakscheck_cycle.txt"), query="device_id=D-1")
    assert refused.status_code == 400 and refused.json()["path"] == "build_version"


def test_stacks_group_the_leaks_and_the_allocator_is_skipped(upload, app):
    done(send(upload, xcode("handwritten_stacks_and_cycles.txt")))
    titles = sorted(LeakGroup.objects.values_list("title", "occurrences", "bytes"))
    # innermost frames that are no allocator's: the Chat image (unnamed: its module's name), and
    # ChatImageCache.decode(_:) for the malloc
    assert titles == [
        ("ROOT LEAK: ChatMessage in Chat", 2, 96),
        ("ROOT LEAK: malloc in ChatImageCache.decode(_:) in ChatImageCache.decode(_:)", 1, 16),
    ]


def test_the_footprint_and_the_tree_on_the_report_page(upload, app, member_client):
    done(send(upload, xcode("handwritten_stacks_and_cycles.txt")))
    report = LeakReport.objects.get()
    page = member_client.get(report.get_absolute_url()).content.decode()
    assert "<h1>Xcode leaks report of Chat (pid 812)</h1>" in page
    assert 'id="xcode-footprint"' in page
    assert "48.2M" in page and "61.0M" in page and "41,926 nodes" in page
    assert "__weak _delegate --&gt; CYCLE BACK TO &lt;ChatViewController 0x600002d1c000&gt;" in page
    cluster = Cluster.objects.get(key=["ChatDataSource", "ChatViewController"])
    assert f'href="/apps/{app.pk}/cycles/{cluster.pk}/"' in page


def test_one_cycle_from_either_tool_is_one_cluster_with_one_triage(upload, app, member, api_client):
    fbrcd = (DATA / "cycles" / "nslog_cycles.txt").read_bytes()
    done(send(upload, fbrcd, query="build_version=8.0.3&build_number=103&device_id=D-2"))
    chat = Cluster.objects.get(key=["ChatDataSource", "ChatViewController"])
    chat.change_triage(member, status=Status.OPEN, assignee=member)
    done(send(upload, xcode("handwritten_stacks_and_cycles.txt")))
    chat.refresh_from_db()
    assert Cluster.objects.filter(key=["ChatDataSource", "ChatViewController"]).count() == 1
    assert (chat.status, chat.assignee) == (Status.OPEN, member)
    body = api_client.get(f"/api/v1/cycles/{chat.pk}").json()
    tools = {row["tool"]: row["occurrences"] for row in body["reported_by"]}
    assert tools == {"FBRetainCycleDetector": 2, "Xcode leaks": 2}
    # the loop through `__weak _delegate` retains nothing by itself; the others do
    loops = {
        tuple(link["class"] for link in m["cycle"]): m["retains"] for m in body["member_cycles"]
    }
    assert loops[("ChatDataSource", "ChatViewController")] is False
    assert set(loops.values()) == {False, True}
    weak_loop = CanonicalCycle.objects.get(
        cluster=chat, canonical=[["ChatDataSource", ["_dataSource"]],
                                 ["ChatViewController", ["_delegate"]]]
    )  # fmt: skip
    assert weak_loop.ownership == ["strong", "weak"]


def test_the_weak_reference_is_never_the_link_to_weaken(upload, app, member_client):
    done(send(upload, xcode("handwritten_stacks_and_cycles.txt")))
    chat = Cluster.objects.get(key=["ChatDataSource", "ChatViewController"])
    page = member_client.get(chat.get_absolute_url()).content.decode()
    weaken = page[page.index('id="weaken"') :].split("</p>")[0]
    # the block's capture of the controller, not ChatDataSource's `_delegate`
    assert "__NSMallocBlock__" in weaken and "self" in weaken and "_delegate" not in weaken
    assert 'data-ownership="weak"' not in page  # the drawn loop is the retaining one
    assert "through a weak reference" in page  # the weak loop, in the members


def test_a_cycle_of_a_weak_reference_alone_offers_no_link(upload, app, member_client):
    weak_only = (
        b"leaks Report Version: 4.0\nProcess 9: 2 leaks for 96 total leaked bytes.\n\n"
        b"    2 (96 bytes) ROOT CYCLE: <ChatInputBar 0x10> [48]\n"
        b"       1 (48 bytes) __strong _controller --> ROOT CYCLE: <ComposerController 0x20> [48]\n"
        b"          __weak _inputBar --> CYCLE BACK TO <ChatInputBar 0x10> [48]\n"
    )
    done(send(upload, weak_only))
    cluster = Cluster.objects.get()
    page = member_client.get(cluster.get_absolute_url()).content.decode()
    assert 'id="weaken"' not in page and 'id="no-weaken"' in page
    assert 'data-ownership="weak"' in page


def test_unnamed_frames_are_named_by_the_apps_debug_file(upload, app):
    sym = "\n".join(
        [
            f"MODULE mac arm64 {CHAT_UUID.replace('-', '')}0 Chat",
            "FILE 0 Chat/Chat/ChatViewController.m",
            "FILE 1 Chat/Model/ChatMessage.m",
            "2a1f10 40 0 -[ChatViewController viewDidLoad]",
            "FUNC 2a1f10 40 0 -[ChatViewController viewDidLoad]",
            "2a1f10 40 88 0",
            "FUNC 3b7d64 40 0 -[ChatMessage initWithDictionary:]",
            "3b7d64 40 40 1",
        ]
    ).replace("2a1f10 40 0 -[ChatViewController viewDidLoad]\n", "")
    process_debug_files(receive_debug_files(app, [sym.encode() + b"\n"], filename="Chat.sym"))
    done(send(upload, xcode("handwritten_stacks_and_cycles.txt")))
    message = LeakRecord.objects.filter(detail__title="ROOT LEAK: ChatMessage").first()
    assert message is not None
    named = [f for f in message.frames if f.get("symbol") == "-[ChatMessage initWithDictionary:]"]
    assert named and named[0]["file"] == "Chat/Model/ChatMessage.m" and named[0]["line"] == 40
    assert LeakGroup.objects.filter(
        title="ROOT LEAK: ChatMessage in -[ChatMessage initWithDictionary:]"
    ).exists()


def test_a_mangled_report_stores_nothing(upload, app):
    response = send(upload, xcode("bytebuddy_spliced.txt"))
    assert response.status_code == 400
    assert response.json()["path"] == "line 27"
    assert Upload.objects.get().status == Upload.REJECTED
    assert not LeakReport.objects.exists() and not CycleReport.objects.exists()


def test_the_import_command(app, ingest_secret, tmp_path):
    path = tmp_path / "leaks.txt"
    path.write_bytes(xcode("memoryleakscheck_cycle.txt"))
    out = StringIO()
    call_command(
        "import_snapshot", str(path), "--key", ingest_secret, "--build-version", "8.0.4",
        stdout=out, stderr=StringIO(),
    )  # fmt: skip
    assert "imported as leaks #" in out.getvalue()
    assert LeakReport.objects.get().build.version == "8.0.4"
