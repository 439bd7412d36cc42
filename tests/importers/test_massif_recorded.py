"""Every massif file tests/corpus/record_massif.sh recorded (valgrind 3.19.0's massif, Debian 12)
read with ms_print's own figures, from the ms_print output recorded beside each file
(`<file>.ms_print.txt`), read here with this test's own expressions: its number of snapshots,
its detailed snapshots and peak, and every row of its table (time, total, useful heap, extra
heap, stacks). The same file compressed with gzip, bzip2 or xz (as massif-visualizer opens it)
uploads as the same snapshot."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memdash.allocations.models import Snapshot
from memdash.ingest.writes import formats
from memdash.ingest.writes.parsers import massif
from tests.importers.test_massif import table

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "massif"
RECORDED = SAMPLES / "massif.recorded.txt"
META = {
    "app_id": "com.example.native",
    "platform": "linux",
    "build_version": "3.1",
    "received_at": datetime(2026, 11, 20, 9, 0, tzinfo=UTC),
}
ROW = re.compile(r"^\s*(\d+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s*$")
NAMES = [
    line.split(":")[0]
    for line in RECORDED.read_text().splitlines()
    if line.startswith("massif.out.") and "valgrind --tool=massif" in line
]


def number(text: str) -> int:
    return int(text.replace(",", ""))


class MsPrint:
    """What ms_print printed for a file."""

    def __init__(self, text: str) -> None:
        self.unit = re.search(r"^\s+n\s+time\((\w+)\)", text, re.M)[1]
        self.snapshots = int(re.search(r"^Number of snapshots: (\d+)$", text, re.M)[1])
        detailed = re.search(r"^ Detailed snapshots: \[(.*)\]$", text, re.M)[1]
        self.detailed = [int(item.split()[0]) for item in detailed.split(", ")] if detailed else []
        peak = re.search(r"(\d+) \(peak\)", detailed)
        self.peak = int(peak[1]) if peak else None
        self.rows = {
            int(m[1]): tuple(number(m[i]) for i in range(2, 7))
            for line in text.splitlines()
            if (m := ROW.match(line))
        }


def test_the_recording_holds_each_kind_of_massif_run():
    assert NAMES == [
        "massif.out.grow", "massif.out.grow_bytes", "massif.out.grow_stacks",
        "massif.out.grow_pages", "massif.out.leaky_bytes", "massif.out.leaky",
    ]  # fmt: skip
    assert "# tool: valgrind-3.19.0" in RECORDED.read_text()


@pytest.mark.parametrize("name", NAMES)
def test_each_recorded_file_reads_with_ms_prints_figures(name):
    printed = MsPrint((SAMPLES / f"{name}.ms_print.txt").read_text())
    raw = (SAMPLES / name).read_bytes()
    assert formats.detect(raw, None).name == "massif"
    doc, counts = massif.convert(raw, None, META)
    assert counts["massif_snapshots"] == printed.snapshots == len(printed.rows)
    assert counts["massif_detailed_snapshots"] == len(printed.detailed)
    assert counts.get("massif_peak_snapshot") == printed.peak
    for n, (time, total, useful, extra, stacks) in printed.rows.items():
        assert table(doc, n) == (total, useful, extra, stacks), (name, n)
        if printed.unit == "ms":  # ms_print's time(ms) column; other units are in the name
            assert doc["generations"][n]["at_ms"] == time
    if printed.peak is not None:
        time, total, useful, extra, stacks = printed.rows[printed.peak]
        assert (counts["massif_peak_bytes"], counts["massif_peak_useful_heap_bytes"]) == (
            total,
            useful,
        )
        assert (counts["massif_peak_extra_heap_bytes"], counts["massif_peak_stacks_bytes"]) == (
            extra,
            stacks,
        )


def test_stacks_and_pages_as_heap_are_in_their_columns():
    stacks = MsPrint((SAMPLES / "massif.out.grow_stacks.ms_print.txt").read_text())
    assert any(row[4] for row in stacks.rows.values())  # ms_print's stacks(B) column
    pages = MsPrint((SAMPLES / "massif.out.grow_pages.ms_print.txt").read_text())
    assert all(row[1] % 4096 == 0 and row[3] == 0 for row in pages.rows.values())  # whole pages


@pytest.mark.django_db
@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2", ".xz"])
def test_compressed_as_massif_visualizer_opens_them(upload, suffix):
    """massif.out.grow_bytes as massif wrote it, and its .gz, .bz2 and .xz (made by gzip,
    bzip2 and xz from massif's bytes): each one snapshot, with ms_print's peak."""
    printed = MsPrint((SAMPLES / "massif.out.grow_bytes.ms_print.txt").read_text())
    body = (SAMPLES / f"massif.out.grow_bytes{suffix}").read_bytes()
    response = upload(body, content_type="application/octet-stream", query="build_version=3.1")
    answer = response.json()
    assert response.status_code == 202 and answer["status"] == "done", answer
    assert answer["format"] == "massif"
    assert answer["counts"]["massif_peak_snapshot"] == printed.peak
    assert answer["counts"]["massif_peak_bytes"] == printed.rows[printed.peak][1]
    assert Snapshot.objects.count() == 1
