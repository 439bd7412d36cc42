"""The real valgrind and sanitizer files of four_kinds.c (tests/data/PROVENANCE.md) through the
upload API, on the pages and in the JSON: each kind of memory apart, only the lost kinds counted
as leaks, the tool named as it names itself, one leak one group whichever tool printed it. The
expected figures are the tools' own (LEAK SUMMARY, SUMMARY lines), quoted beside them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memdash.leaks.models import LeakGroup, LeakRecord, LeakReport

pytestmark = pytest.mark.django_db

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leaks"


def send(upload, name: str, build: str = "1.0") -> dict:
    response = upload(
        (SAMPLES / name).read_bytes(),
        content_type="text/plain",
        query=f"build_version={build}&device_id=D-1",
    )
    body = response.json()
    assert response.status_code == 202 and body["status"] == "done", body
    return body


def test_valgrind_text_log_stored_with_kinds_apart(upload, app):
    body = send(upload, "valgrind-3.19_full_all.txt")
    assert body["format"] == "valgrind.memcheck-log"
    # Five loss records; the four lost ones in three groups (lose_node's definitely and
    # indirectly lost blocks are one allocation site), the still reachable one in none.
    assert (body["counts"]["records"], body["counts"]["groups"]) == (5, 3)
    report = LeakReport.objects.get(app=app)
    # LEAK SUMMARY: definitely lost 116 bytes in 2 blocks, indirectly lost 40 in 1, possibly
    # lost 64 in 1: 220 bytes in 4 blocks leaked; "still reachable: 32 bytes in 1 blocks" apart.
    assert (report.stated_bytes, report.stated_allocations) == (220, 4)
    assert (report.listed_bytes, report.listed_allocations, report.listed_records) == (220, 4, 5)
    assert report.unreachable_bytes == 220
    assert report.reachable_bytes == 32
    assert report.kinds["reachable"] == {
        "stated_bytes": 32,
        "stated_allocations": 1,
        "listed_bytes": 32,
        "listed_allocations": 1,
        "records": 1,
    }
    assert report.process == "pid 21947"
    assert report.info["version"] == "Valgrind-3.19.0"
    assert not LeakRecord.objects.get(kind="reachable").group_id


def test_valgrind_xml_listed_figure_leaves_still_reachable_out(upload, app):
    send(upload, "valgrind-3.19_protocol4.xml")
    report = LeakReport.objects.get(app=app)
    # The five <text>s: leaks 40 + 16 + 64 + 100 = 220 bytes listed, not 252 with the 32
    # still reachable bytes; protocol 4 states no totals, so the leaked figure is that sum.
    assert (report.stated_bytes, report.listed_bytes, report.unreachable_bytes) == (None, 220, 220)
    assert report.reachable_bytes == 32


def test_report_page_names_the_tool_and_shows_each_kind(upload, app, member_client):
    send(upload, "valgrind-3.19_full_all.txt")
    send(upload, "sanitizers/gcc12-asan.txt")
    valgrind, asan = LeakReport.objects.filter(app=app).order_by("id")
    page = member_client.get(valgrind.get_absolute_url()).content.decode()
    assert "<h1>valgrind memcheck report of pid 21947</h1>" in page
    assert 'id="report-kinds"' in page
    for label in ("definitely lost", "indirectly lost", "possibly lost", "still reachable"):
        assert f"<td>{label}</td>" in page
    assert 'id="heap-summary"' in page and "5 allocs, 0 frees" in page
    page = member_client.get(asan.get_absolute_url()).content.decode()
    # "==PID==ERROR: LeakSanitizer: detected memory leaks", "SUMMARY: AddressSanitizer: …"
    pid = re.search(r"==(\d+)==ERROR", (SAMPLES / "sanitizers/gcc12-asan.txt").read_text())[1]
    assert f"<h1>LeakSanitizer report of pid {pid}</h1>" in page
    assert "runtime AddressSanitizer" in page
    assert "<td>direct leak</td>" in page and "<td>indirect leak</td>" in page
    kinds_csv = member_client.get(valgrind.get_absolute_url() + "?format=csv&table=kinds")
    rows = b"".join(kinds_csv.streaming_content).decode().splitlines()
    assert rows[0] == "Kind,Leak,Stated bytes,Stated blocks,Listed bytes,Listed allocations,Records"
    assert "still reachable,no,32,1,32,1,1" in rows


def test_list_page_and_json_keep_still_reachable_apart(upload, app, member_client, api_client):
    send(upload, "valgrind-3.19_summary.txt")
    page = member_client.get(f"/apps/{app.pk}/leaks/")
    (row,) = page.context["totals"]
    # The summary-only run: 220 bytes leaked (stated), 32 still reachable, no record listed.
    assert (row.unreachable_bytes, row.reachable_bytes, row.unlisted_bytes) == (220, 32, 220)
    assert row.kinds["direct"] == {"bytes": 116, "allocations": 2}
    data = api_client.get(f"/api/v1/apps/{app.pk}/leaks").json()
    (build,) = data["builds"]
    assert (build["unreachable_bytes"], build["reachable_bytes"]) == (220, 32)
    assert build["kinds"]["possible"] == {"bytes": 64, "allocations": 1}
    (report,) = data["reports"]
    assert (report["tool_name"], report["listed_bytes"], report["stated_bytes"]) == (
        "valgrind memcheck",
        0,
        220,
    )
    assert report["kinds"]["reachable"]["stated_bytes"] == 32


def test_one_leak_one_group_across_tools_and_sanitizer_versions(upload, app, api_client):
    """lose_buffer()'s 100 bytes as valgrind, GCC 12's ASan and Clang 14's LSan print them: one
    group of three occurrences."""
    send(upload, "valgrind-3.19_full_all.txt", "1.0")
    send(upload, "sanitizers/gcc12-asan.txt", "1.1")
    send(upload, "sanitizers/clang14-lsan.txt", "1.2")
    group = LeakGroup.objects.get(app=app, title="lose_buffer")
    assert (group.occurrences, group.bytes, group.builds) == (3, 300, 3)
    # lose_node: valgrind's definitely (16) and indirectly (40) lost blocks, each ASan's direct
    # 16 and indirect 40: one site, its kinds apart.
    node = LeakGroup.objects.get(app=app, title="lose_node")
    data = api_client.get(f"/api/v1/leaks/{node.pk}").json()
    assert data["kinds"] == {
        "direct": {"occurrences": 3, "bytes": 48, "allocations": 3},
        "indirect": {"occurrences": 3, "bytes": 120, "allocations": 3},
    }


def test_refusals_name_the_format_and_the_line(upload, app):
    response = upload(
        (SAMPLES / "valgrind-3.19_no_leak_check.txt").read_bytes(),
        content_type="text/plain",
        query="build_version=1.0",
    )
    body = response.json()
    assert response.status_code == 400, body
    assert body["path"] == "line 14"
    assert "valgrind memcheck log without leak records" in body["error"]
    assert "--leak-check=full" in body["error"]
    assert not LeakReport.objects.exists()
