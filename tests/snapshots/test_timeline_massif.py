"""A massif run timed in ms has a timeline: its snapshots' total bytes at their times, against
ms_print's own figures for the recorded massif.out.leaky (time(ms) and total(B) of each of its 75
snapshots); a range keeps the massif snapshots taken in it. A run timed in instructions has none,
and the page says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.importers.test_massif_recorded import MsPrint

pytestmark = pytest.mark.django_db

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "massif"


def uploaded(upload, name: str) -> int:
    body = (SAMPLES / name).read_bytes()
    response = upload(body, content_type="application/octet-stream", query="build_version=3.1")
    assert response.status_code == 202 and response.json()["status"] == "done", response.json()
    return response.json()["snapshot"]["id"]


def test_massif_timed_in_ms(upload, api_client, member_client):
    printed = MsPrint((SAMPLES / "massif.out.leaky.ms_print.txt").read_text())
    sid = uploaded(upload, "massif.out.leaky")
    html = member_client.get(f"/snapshots/{sid}/").content.decode()
    assert 'id="timeline-chart"' in html and "data-points=" in html
    # a range of 231 to 235 ms: the snapshots ms_print times in it, their totals added up
    inside = [n for n, row in printed.rows.items() if 231 <= row[0] <= 235]
    assert inside  # (the recording has some)
    response = api_client.get(f"/api/v1/snapshots/{sid}/statistics?from_ms=231&to_ms=235")
    assert response.status_code == 200, response.json()
    answer = response.json()
    first, last = printed.rows[inside[0]][0], printed.rows[inside[-1]][0]
    assert answer["range"] == {"from_ms": first, "to_ms": last}
    total = {r["category"]: r for r in answer["summary"]}["All Heap & Anonymous VM"]
    assert total["persistent_bytes"] == sum(printed.rows[n][1] for n in inside)
    # the whole run: every snapshot's total
    whole = api_client.get(f"/api/v1/snapshots/{sid}/statistics?from_ms=0").json()
    summed = {r["category"]: r for r in whole["summary"]}["All Heap & Anonymous VM"]
    assert summed["persistent_bytes"] == sum(row[1] for row in printed.rows.values())
    # the call tree of the range adds up the same bytes
    tree = api_client.get(f"/api/v1/snapshots/{sid}/calltree?from_ms=231&to_ms=235").json()
    assert tree["total_bytes"] == total["persistent_bytes"]
    outside = api_client.get(f"/api/v1/snapshots/{sid}/statistics?from_ms=500&to_ms=600")
    assert outside.status_code == 404


def test_the_chart_is_ms_prints_graph(upload):
    from memdash.allocations.models import Snapshot
    from memdash.allocations.reads.timeline import timeline_chart_data

    printed = MsPrint((SAMPLES / "massif.out.leaky.ms_print.txt").read_text())
    data = timeline_chart_data(Snapshot.objects.get(pk=uploaded(upload, "massif.out.leaky")))
    assert data is not None and data["kind"] == "points"
    assert data["times"] == [printed.rows[n][0] for n in sorted(printed.rows)]
    assert data["live_bytes"] == [printed.rows[n][1] for n in sorted(printed.rows)]
    assert data["live_count"] is None  # massif counts bytes, not blocks


def test_massif_timed_in_instructions_has_no_timeline(upload, member_client, api_client):
    sid = uploaded(upload, "massif.out.grow")
    html = member_client.get(f"/snapshots/{sid}/").content.decode()
    assert 'id="no-timeline"' in html and "--time-unit=ms" in html
    assert api_client.get(f"/api/v1/snapshots/{sid}/statistics?from_ms=0").status_code == 404
