"""MetricKit's diagnostics one by one: a device's MXDiagnosticPayload with N crash diagnostics
counts N, each kept with its call-stack tree (binary UUID + offset), named by the app's debug
files on its page, and counted per build and kind on the OS page.

The call-stack tree is a real one: tests/data/metrickit/sentry-cocoa/tree-real.json, a crash's
tree as a device wrote it, from sentry-cocoa's test data (PROVENANCE.md there). The payload
around it (window, metadata, the second crash's signal, the hang) is written by hand after
Apple's MXDiagnosticPayload documentation. Expected numbers are counted from the tree file by the
walk in `frames_in` (not the code under test)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.urls import reverse

from memdash.foom.logic.diagnostics import read_call_stack_tree
from memdash.foom.models import MetricKitDiagnostic
from memdash.symbols.writes import store_debug_files

pytestmark = pytest.mark.django_db
DATA = Path(__file__).parents[1] / "data" / "metrickit"
TREE = json.loads((DATA / "sentry-cocoa" / "tree-real.json").read_text())
SENTRY_UUID = "9E8D8DE6-EEC1-3199-8720-9ED68EE3F967"  # the crashing frame's binary (Sentry)


def frames_in(tree: dict) -> int:
    def count(frame: dict) -> int:
        return 1 + sum(count(sub) for sub in frame.get("subFrames", []))

    return sum(count(root) for stack in tree["callStacks"] for root in stack["callStackRootFrames"])


def meta(**extra) -> dict:
    return {
        "appVersion": "8.0.4", "appBuildVersion": "104", "osVersion": "iPhone OS 17.4.1 (21E236)",
        "deviceType": "iPhone14,5", "platformArchitecture": "arm64e", "regionFormat": "US",
        "bundleIdentifier": "com.example.chat", **extra,
    }  # fmt: skip


def diagnostic_payload() -> dict:
    """Two crashes (SIGSEGV and SIGABRT, the same tree) and a hang of 3 s, one payload."""
    reason = "Namespace SIGNAL, Code 0xb"
    crash = {"version": "1.0.0", "callStackTree": copy.deepcopy(TREE),
             "diagnosticMetaData": meta(exceptionType=1, exceptionCode=0, signal=11,
                                        terminationReason=reason)}  # fmt: skip
    abort = copy.deepcopy(crash)
    abort["diagnosticMetaData"].update(signal=6, terminationReason="Namespace SIGNAL, Code 0x6")
    hang = {"version": "1.0.0", "callStackTree": copy.deepcopy(TREE),
            "diagnosticMetaData": meta(hangDuration="3 sec")}  # fmt: skip
    return {
        "timeStampBegin": "2026-10-23 10:12:00 +0000",
        "timeStampEnd": "2026-10-23 10:12:00 +0000",
        "crashDiagnostics": [crash, abort],
        "hangDiagnostics": [hang],
    }


def sent(upload, body, query="device_id=D-1") -> dict:
    response = upload(body, query=query)
    assert response.status_code == 202, response.json()
    return response.json()


def test_the_real_tree_is_read_frame_by_frame():
    per_thread, stacks = read_call_stack_tree(TREE, "callStackTree")
    assert (per_thread, len(stacks)) == (True, 16)  # Sentry's own test counts 16 call stacks
    assert [s.attributed for s in stacks].count(True) == 1
    root = stacks[0].frames[0]
    assert root[:4] == [SENTRY_UUID, 414732, 1, "Sentry"]

    # every frame kept, nested as sent: count them the plain way
    def count(frame):
        return 1 + sum(count(sub) for sub in frame[4])

    assert sum(count(f) for s in stacks for f in s.frames) == frames_in(TREE) == 92


def test_n_crashes_of_a_payload_count_n_and_are_kept_with_their_trees(upload):
    body = sent(upload, diagnostic_payload())
    assert (body["counts"]["diagnostics"], body["counts"]["diagnostics_created"]) == (3, 3)
    rows = MetricKitDiagnostic.objects.order_by("kind", "id")
    assert [(d.kind, str(d.build), d.device_key) for d in rows] == [
        ("crash", "8.0.4 (104)", "D-1"), ("crash", "8.0.4 (104)", "D-1"),
        ("hang", "8.0.4 (104)", "D-1"),
    ]  # fmt: skip
    assert [d.frames for d in rows] == [frames_in(TREE)] * 3
    assert [d.summary.get("signal") for d in rows] == [11, 6, None]
    assert rows[0].stacks[0]["frames"][0][:2] == [SENTRY_UUID, 414732]
    again = sent(upload, [diagnostic_payload()])  # the same payload in another upload
    assert (again["counts"]["diagnostics"], again["counts"]["diagnostics_created"]) == (3, 0)
    assert MetricKitDiagnostic.objects.count() == 3


def test_the_os_page_counts_per_build_and_kind_and_a_diagnostic_is_named_by_debug_files(
    upload, app, member_client, tmp_path
):
    sent(upload, diagnostic_payload())
    page = member_client.get(reverse("foom:os_exits", args=[app.pk])).content.decode()
    table = page[page.index('id="os-diagnostics"') :]
    table = table[: table.index("</table>")]
    # 8.0.4 (104): 2 crashes, 1 hang, 0 CPU exceptions, 0 disk writes, 0 launches, 3 in all
    cells = [c.split(">")[1] for c in table.split('<td class="num"')[1:]]
    assert [c.split("<")[0] for c in cells] == ["2", "1", "0", "0", "0", "3"]
    response = member_client.get(
        reverse("foom:os_exits", args=[app.pk]), {"format": "csv", "table": "diagnostics"}
    )
    csv = b"".join(response.streaming_content).decode()
    assert csv.splitlines()[1] == "8.0.4,104,2,1,0,0,0,3"

    crash = MetricKitDiagnostic.objects.filter(kind="crash").order_by("id")[0]
    url = reverse("foom:diagnostic", args=[app.pk, crash.pk])
    assert f'href="{url}"' in page
    before = member_client.get(url).content.decode()
    assert "Sentry + 0x6540c" in before  # 414732 = 0x6540c, no debug file yet
    # A Breakpad symbol file for Sentry's binary, hand-written: one function around the offset.
    sym = tmp_path / "Sentry.sym"
    sym.write_text(f"MODULE ios arm64 {SENTRY_UUID.replace('-', '')}0 Sentry\n"
                   f"FUNC {414732 - 0x20:x} 40 0 -[SentryCrashExampleCrash crash]\n")  # fmt: skip
    store_debug_files(app, sym, image_name="Sentry", file_name=sym.name)
    after = member_client.get(url).content.decode()
    assert "-[SentryCrashExampleCrash crash]" in after and "Sentry + 0x6540c" not in after
    assert "Namespace SIGNAL, Code 0xb" in after


def test_a_diagnostic_of_another_app_is_a_404(upload, app, member_client):
    sent(upload, diagnostic_payload())
    crash = MetricKitDiagnostic.objects.first()
    assert (
        member_client.get(reverse("foom:diagnostic", args=[app.pk, crash.pk + 1000])).status_code
        == 404
    )


@pytest.mark.parametrize(
    "change,path",
    [
        (lambda p: p["crashDiagnostics"][0]["callStackTree"]["callStacks"][0]
         ["callStackRootFrames"][0].update(offsetIntoBinaryTextSegment=-4),
         "[0].crashDiagnostics[0].callStackTree.callStacks[0].callStackRootFrames[0]"
         ".offsetIntoBinaryTextSegment"),
        (lambda p: p["hangDiagnostics"][0]["callStackTree"]["callStacks"][1]
         ["callStackRootFrames"][0].update(subFrames={}),
         "[0].hangDiagnostics[0].callStackTree.callStacks[1].callStackRootFrames[0].subFrames"),
        (lambda p: p["crashDiagnostics"][1]["diagnosticMetaData"].update(appVersion=None),
         "[0].crashDiagnostics[1].diagnosticMetaData.appVersion"),
    ],
)  # fmt: skip
def test_a_bad_diagnostic_is_refused_with_its_path_and_nothing_is_stored(upload, change, path):
    payload = copy.deepcopy(diagnostic_payload())
    change(payload)
    response = upload([payload])
    assert response.status_code == 400, response.json()
    assert response.json()["path"] == path
    assert not MetricKitDiagnostic.objects.exists()
