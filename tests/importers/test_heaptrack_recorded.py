"""The heaptrack files tests/corpus/record_heaptrack.sh recorded (heaptrack 1.4.0, Debian 12) read
with heaptrack_print's own figures, from its output recorded beside each file
(`<file>.print.txt`, `heaptrack_print --disable-builtin-suppressions`), read here with this
test's own expressions and heaptrack_print's rounding (1000-based K and M, two decimals); and the
raw stream of a run (`heaptrack --raw`, before heaptrack_interpret) refused with the reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memdash.allocations.models import Snapshot
from memdash.ingest.models import Upload
from memdash.ingest.writes.parsers import heaptrack
from tests.importers.test_heaptrack import BUILD, META

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "heaptrack"
RECORDED = (SAMPLES / "heaptrack.recorded.txt").read_text()
NAMES = re.findall(r"^(heaptrack\.\w+\.zst): heaptrack -o", RECORDED, re.M)


def printed(name: str) -> dict[str, str]:
    """heaptrack_print's summary lines: label -> its figure as printed."""
    text = (SAMPLES / f"{name}.print.txt").read_text()
    return dict(re.findall(r"^([a-zA-Z ()]+): ([\d.]+[KMG]?B?|\d+)(?: \(\d+/s\))?$", text, re.M))


def as_heaptrack_prints(value: int) -> str:
    """heaptrack_print's size format: bytes below 1000, else K, M or G to two decimals."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= scale:
            return f"{value / scale:.2f}{unit}"
    return f"{value}B"


def test_the_recording_and_its_tool():
    assert NAMES == ["heaptrack.leaky.zst", "heaptrack.grow.zst"]
    assert "# tool: heaptrack 1.4.0" in RECORDED


@pytest.mark.parametrize("name", NAMES)
def test_each_recording_reads_with_heaptrack_prints_figures(name):
    figures = printed(name)
    _, counts = heaptrack.convert((SAMPLES / name).read_bytes(), None, META)
    assert counts["heaptrack_allocations"] == int(figures["calls to allocation functions"])
    assert counts["heaptrack_temporary"] == int(figures["temporary memory allocations"])
    assert (
        as_heaptrack_prints(counts["heaptrack_peak_bytes"])
        == (figures["peak heap memory consumption"])
    )
    # heaptrack 1.4.0 applies no embedded suppression ("invalid suppression line"): its leaked
    # figure is memdash's leaked plus what the file's own suppressions cover.
    leaked = counts["heaptrack_leaked_bytes"] + counts["heaptrack_suppressed_bytes"]
    assert as_heaptrack_prints(leaked) == figures["total memory leaked"]
    rss = counts["heaptrack_peak_rss_bytes"]
    assert as_heaptrack_prints(rss) == figures["peak RSS (including heaptrack overhead)"]


def test_grow_figures_as_printed():
    # heaptrack.grow.zst.print.txt: "calls to allocation functions: 2219", "temporary memory
    # allocations: 4", "peak heap memory consumption: 451.85K", "total memory leaked: 62.07K"
    _, counts = heaptrack.convert((SAMPLES / "heaptrack.grow.zst").read_bytes(), None, META)
    assert (counts["heaptrack_allocations"], counts["heaptrack_temporary"]) == (2219, 4)
    assert round(counts["heaptrack_peak_bytes"] / 1000, 2) == 451.85
    assert round(counts["heaptrack_leaked_bytes"] / 1000, 2) == 62.07


@pytest.mark.django_db
def test_the_raw_stream_is_refused_with_the_reason(upload):
    body = (SAMPLES / "heaptrack.leaky_raw.raw.zst").read_bytes()
    response = upload(body, content_type="application/zstd", query=BUILD)
    assert response.status_code == 400, response.json()
    answer = response.json()
    assert answer["error"].startswith("not a heaptrack data file yet: heaptrack's raw stream")
    assert "heaptrack_interpret" in answer["error"]
    assert answer["path"] == "line 2"  # "x f /tmp/memdash-heaptrack/leaky": the executable
    assert Upload.objects.get(pk=answer["id"]).status == "rejected"
    assert Snapshot.objects.count() == 0
