"""The tables that became CSV with issue 16 (the builds, a build's snapshots, debug files and
missing ones, leak totals, reports, occurrences and records, a cluster's member cycles, a run's
facts, churn's flagged builds and scenarios, a generation diff's generations, an upload): each
answers its header and the rows its page shows, under the page's filters, with figures worked out
by hand from the small documents stored here."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.test import Client

from memdash.churn.models import Scenario
from memdash.cycles.models import Cluster
from memdash.foom.models import Session
from memdash.ingest.models import Upload
from memdash.leaks.models import LeakGroup, LeakReport
from tests.churn.test_churn_ingest import BUILD_1, BUILD_2
from tests.compare.helpers import SNAPSHOT_A_ROWS, SNAPSHOT_B_ROWS, document, store
from tests.core.test_exports import page_rows
from tests.cycles.helpers import builds, loop
from tests.cycles.helpers import store as store_cycles
from tests.foom.helpers import ago, ended, run, sessions_doc
from tests.symbols.documents import by_address
from tests.symbols.helpers import ELF, ELF_DEBUG_ID
from tests.symbols.test_symbolication import post_debug_file, stored

pytestmark = pytest.mark.django_db

LEAKS = Path(__file__).resolve().parents[1] / "data" / "leaks"


def table(client: Client, url: str, **params: str) -> list[list[str]]:
    """The CSV answer of `url` with these parameters: its header row, then its rows."""
    response = client.get(url, {**params, "format": "csv"})
    assert response.status_code == 200, (url, params)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def csv_href(html: str, query: str) -> bool:
    """Whether the page links its table's CSV with this query string (`&` escaped in HTML)."""
    return f'class="csv-link" href="?{query.replace("&", "&amp;")}"' in html


def test_builds_and_a_builds_snapshots(member_client, app, upload):
    # build 1.0: snapshot A (periodic, D-1) and B's rows (memory warning, D-2); 1.1: B's rows
    a = store(upload, document(SNAPSHOT_A_ROWS, "1.0", "10", device="D-1"))
    b = store(
        upload, document(SNAPSHOT_B_ROWS, "1.0", "10", device="D-2", trigger="memory_warning")
    )
    store(upload, document(SNAPSHOT_B_ROWS, "1.1", "11", captured_at="2026-11-21T10:00:00Z"))
    url = f"/apps/{app.pk}/"
    assert csv_href(member_client.get(url).content.decode(), "format=csv")
    rows = table(member_client, url)
    assert rows[0] == [
        "Version", "Number", "Commit", "Snapshots", "Persistent bytes (median per snapshot)",
        "Last upload",
    ]  # fmt: skip
    # A's persistent bytes: 200 + 300 + 500 + 640 + 256 + 32 + 16 = 1944; B's: 2000 + 896 + 1000
    # = 3896. Newest build first; 1.0's two snapshots [1944, 3896]: the upper middle one, 3896,
    # as the page prints it.
    assert [r[:5] for r in rows[1:]] == [
        ["1.1", "11", "", "1", "3896"],
        ["1.0", "10", "", "2", "3896"],
    ]
    assert [r[0] for r in rows[1:]] == [r[0] for r in page_rows(member_client, url, "builds")]
    assert rows[1][5].endswith("+00:00")  # a time with its offset

    build = Upload.objects.get(result_id=a).app.builds.get(version="1.0")
    url = build.get_absolute_url()
    html = member_client.get(url, {"trigger": "memory_warning"}).content.decode()
    assert csv_href(html, "trigger=memory_warning&format=csv&table=snapshots")
    rows = table(member_client, url, trigger="memory_warning", table="snapshots")
    assert rows[0] == [
        "Snapshot", "Device model", "OS", "Trigger", "Captured at", "Persistent bytes",
        "# Persistent",
    ]  # fmt: skip
    # the filter keeps B alone: 20 + 14 + 1 = 35 persistent allocations of 3896 bytes
    assert rows[1:] == [
        [
            str(b),
            "iPhone14,5",
            rows[1][2],
            "memory_warning",
            "2026-11-20T10:00:00+00:00",
            "3896",
            "35",
        ]
    ]
    assert len(table(member_client, url, table="snapshots")) == 3  # header, A and B
    assert member_client.get(url, {"format": "csv", "table": "nope"}).status_code == 404


def test_debug_files_and_missing_ones(
    client, member_client, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    snapshot = stored(upload, by_address())
    url = f"/snapshots/{snapshot.pk}/symbols/"
    assert csv_href(member_client.get(url).content.decode(), "format=csv")
    header, *rows = table(member_client, url)
    assert header == [
        "Image", "System", "UUID / debug id", "Arch", "Frames without name", "Bytes under them",
        "Debug file kind",
    ]  # fmt: skip
    # 4 frames of chat_cache.elf have no name; the stacks through them hold 704 of the
    # snapshot's 17,088 bytes (tests/symbols/test_pages.py works it out)
    assert rows == [["chat_cache.elf", "no", ELF_DEBUG_ID.upper(), "x86_64", "4", "704", ""]]
    build_url = f"/apps/{app.pk}/builds/{snapshot.build_id}/symbols/"
    header, *rows = table(member_client, build_url)
    assert header[6] == "Snapshots" and rows[0][5:7] == ["704", "1"]

    post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    assert table(member_client, url) == [header[:6] + ["Debug file kind"]]  # all named now
    url = f"/apps/{app.pk}/debug-files/"
    assert csv_href(member_client.get(url).content.decode(), "format=csv")
    header, *rows = table(member_client, url)
    assert header == [
        "Image", "Arch", "Debug id", "Kind", "Line tables", "Size (bytes)", "Uploaded",
        "Uploaded by", "Builds that use it",
    ]  # fmt: skip
    image, arch, debug_id, _kind, _lines, size, _at, by, used_by = rows[0]
    assert (image, arch, debug_id) == ("chat_cache.elf", "x86_64", ELF_DEBUG_ID)
    assert int(size) == ELF.stat().st_size and by.startswith("key ") and used_by == "1.0 (1)"


@pytest.fixture
def leaks(upload):
    for name, build in [("libmemunreachable_chrome.txt", "1.0"), ("lsan_direct_leak.txt", "1.1")]:
        response = upload(
            (LEAKS / name).read_bytes(),
            content_type="text/plain",
            query=f"build_version={build}&device_id=D-1",
        )
        assert response.status_code == 202 and response.json()["status"] == "done"


def test_leak_totals_reports_occurrences_and_records(leaks, member_client, app):
    url = f"/apps/{app.pk}/leaks/"
    html = member_client.get(url).content.decode()
    assert csv_href(html, "format=csv&table=builds") and csv_href(html, "format=csv&table=reports")
    header, *rows = table(member_client, url, table="builds")
    assert header[:4] == ["Build", "Reports", "Devices", "Unreachable bytes"]
    # libmemunreachable: "1632 bytes in 10 unreachable allocations", 336 + 144 = 480 listed:
    # 1632 - 480 = 1152 counted, not listed
    assert rows[0][:7] == ["1.0", "1", "1", "1632", "10", "1632.0", "1152"]
    assert [r[0] for r in rows] == [r[0] for r in page_rows(member_client, url, "leaks-builds")]

    header, *rows = table(member_client, url, table="reports")
    assert len(rows) == LeakReport.objects.filter(app=app).count() == 3
    chrome = next(r for r in rows if r[1] == "libmemunreachable")
    # stated 1632 in 10; listed 480 in 2 records; 1152 bytes in 8 allocations not listed
    assert chrome[6:13] == ["1632", "10", "480", "2", "1152", "8", "2"]
    assert member_client.get(url, {"format": "csv", "table": "nope"}).status_code == 404

    group = LeakGroup.objects.get(title="336-byte allocations")
    url = group.get_absolute_url()
    assert csv_href(member_client.get(url).content.decode(), "format=csv")
    header, *rows = table(member_client, url)
    assert header[4:] == ["Build", "Device", "Kind", "Bytes", "Allocations"]
    assert [r[4:5] + r[7:] for r in rows] == [["1.0", "336", "1"]]

    report = LeakReport.objects.get(tool="libmemunreachable")
    url = report.get_absolute_url()
    html = member_client.get(url).content.decode()
    assert csv_href(html, "format=csv&table=records") and csv_href(html, "format=csv&table=totals")
    header, *rows = table(member_client, url)
    assert header[:4] == ["#", "Kind", "Bytes", "Allocations"]
    assert [(r[0], r[2], r[3]) for r in rows] == [("1", "336", "1"), ("2", "144", "1")]
    totals = table(member_client, url, table="totals")
    assert [r[:3] for r in totals[1:]] == [
        ["As the tool states them", "1632", "10"],
        ["Sum of the records listed", "480", "2"],
        ["Counted but not listed", "1152", "8"],
    ]


def test_a_clusters_member_cycles(member_client, app):
    b1, b2 = builds(app, 2)
    # A → B three times on D-1 in 8.0.1, once on D-2 in 8.0.2: 4 occurrences, 2 devices, 2 builds
    store_cycles(app, b1, [loop("A", "B")] * 3, device_key="D-1")
    store_cycles(app, b2, [loop("A", "B")], device_key="D-2")
    cluster = Cluster.objects.get(key=["A", "B"])
    url = cluster.get_absolute_url()
    assert csv_href(member_client.get(url).content.decode(), "format=csv&table=members")
    rows = table(member_client, url)
    assert rows == [
        ["Cycle (canonical rotation)", "Occurrences", "Devices", "Builds"],
        ["_a → A _b → B", "4", "2", "2"],
    ]
    shown = page_rows(member_client, url, "members")
    assert rows[1][0] in shown[0][0]  # the page's loop, marks and the closing ↺ aside
    assert member_client.get(url, {"format": "csv", "table": "owners"}).status_code == 404


def test_a_runs_facts_and_snapshots(member_client, app, upload):
    started = ago(days=2)
    doc = sessions_doc(run("r-1", started, end=ended(user_quit=True, crashed=True)))
    assert upload(doc).status_code == 202
    session = Session.objects.get(session_id="r-1")
    url = session.get_absolute_url()
    assert csv_href(member_client.get(url).content.decode(), "format=csv&table=facts")
    rows = dict(table(member_client, url)[1:])
    assert rows["Build"] == "8.0.51 (2741)" and rows["Device id"] == "D1"
    assert rows["Boot time"] == "2026-11-01T06:00:00+00:00"
    # FOREGROUND: 60,000 ms active; the flags in the page's order
    assert (rows["State at the end"], rows["Active for (ms)"]) == ("foreground", "60000")
    assert rows["Flags"] == "crashed user quit"
    assert table(member_client, url, table="snapshots") == [
        ["Snapshot", "Captured", "Trigger", "Persistent bytes"]
    ]


def test_churn_flagged_builds_and_a_scenario(member_client, app, upload):
    for doc in (BUILD_1, BUILD_2):
        assert upload(doc).json()["status"] == "done"
    url = f"/apps/{app.pk}/churn/"
    html = member_client.get(url).content.decode()
    open_id = Scenario.objects.get(app=app, name="open").pk
    assert csv_href(html, "format=csv&table=flagged")
    assert csv_href(html, f"format=csv&table=scenario-{open_id}")
    # "open": churn 16, 18, 16 in 1.0 (median 16), 28, 28 in 1.1: +75 %, past the 10 % default
    assert table(member_client, url, table="flagged") == [
        ["Build", "Scenario", "Churn before", "Churn", "Change %"],
        ["1.1 (11)", "open", "16.0", "28.0", "75.0"],
    ]
    header, first, second = table(member_client, url, table=f"scenario-{open_id}")
    assert header[:4] == ["Build", "Runs", "Churn (median)", "Churn low"]
    # 1.0: elapsed 100, 140, 90 ms: median 100, range 90 to 140
    assert first[:5] + first[6:9] == [
        "1.0 (10)",
        "3",
        "16.0",
        "16.0",
        "18.0",
        "100.0",
        "90.0",
        "140.0",
    ]
    assert (second[0], second[-2:]) == ("1.1 (11)", ["75.0", "yes"])
    assert member_client.get(url, {"format": "csv", "table": "scenario-0"}).status_code == 404


def test_a_generation_diffs_generations(member_client, app, upload):
    a = store(upload, document(SNAPSHOT_A_ROWS))
    url = f"/apps/{app.pk}/snapshots/{a}/generation-diff/"
    assert csv_href(member_client.get(url).content.decode(), "format=csv&table=generations")
    # persistent bytes created in each: Launch 300 + 640 + 32 = 972 (3 + 10 + 1 = 14),
    # Open 500 + 256 + 16 = 772 (5 + 4 + 1 = 10), Idle nothing; the page lists no baseline
    assert table(member_client, url, table="generations") == [
        ["Generation", "Since launch (ms)", "Growth bytes", "# Persistent"],
        ["Launch", "0", "972", "14"],
        ["Open", "1000", "772", "10"],
        ["Idle", "2000", "0", "0"],
    ]
    assert member_client.get(url, {"format": "csv", "table": "x"}).status_code == 404


def test_an_upload(member_client, app, upload):
    doc = sessions_doc(run("u-1", ago(days=1)))
    stored_upload = Upload.objects.get(pk=upload(doc).json()["id"])
    url = stored_upload.get_absolute_url()
    assert csv_href(member_client.get(url).content.decode(), "format=csv")
    rows = table(member_client, url)
    assert rows[0] == ["Field", "Value"]
    values = dict(rows[1:])
    assert values["Upload"] == str(stored_upload.pk) and values["Format"] == "memdash.sessions"
    assert int(values["Size (bytes)"]) == stored_upload.size
    assert values["Status"] == "done" and values["By"].startswith("key ")
