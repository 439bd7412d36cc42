"""heaptrack data files, checked against heaptrack's own figures (tests/data/PROVENANCE.md).

The heaptrack_gui files and the embedded-suppressions file come from heaptrack's test data; the
figures are those heaptrack's parser test asserts (built-in suppressions off). heaptrack.leaky.zst
was written here by Debian's heaptrack 1.4.0 running tests/data/heaptrack/leaky.c; its figures
are what `heaptrack_print --disable-builtin-suppressions` printed for it.
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import pytest
import zstandard

from memdash.allocations.models import Snapshot
from memdash.core.logic import reading
from memdash.core.logic.errors import InvalidUpload, TooLarge
from memdash.ingest.logic import heaptrack_data
from memdash.ingest.writes import formats
from memdash.ingest.writes.parsers import heaptrack

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "heaptrack"
META = {
    "app_id": "com.example.native",
    "platform": "linux",
    "build_version": "2.0",
    "received_at": datetime(2026, 11, 20, 9, 0, tzinfo=UTC),
}
BUILD = "build_version=2.0&build_number=7"
QHASH = "QHashData::allocateNode(int)"


def sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


def text_of(name: str) -> bytes:
    return zstandard.ZstdDecompressor().decompressobj().decompress(sample(name))


@pytest.fixture(scope="module")
def gui_99454():
    raw = sample("heaptrack.heaptrack_gui.99454.zst")
    return heaptrack_data.read(text_of("heaptrack.heaptrack_gui.99454.zst")), raw


def totals(data: heaptrack_data.HeaptrackData) -> dict[str, int]:
    return {
        "allocations": data.allocations,
        "temporary": data.temporary,
        "leaked": data.leaked,
        "peak": data.peak,
    }


def call_site(data: heaptrack_data.HeaptrackData, function: str) -> tuple[int, int, int]:
    """(allocations, leaked, peak) of the trace nodes whose innermost frame is `function`:
    heaptrack's self cost of that symbol (its inclusive cost too when it calls no allocator)."""
    allocations = leaked = peak = 0
    for trace, cost in data.costs.items():
        ip = data.traces[trace - 1][0] if trace else 0
        frames = data.ips[ip - 1].frames if ip else []
        if frames and data.string(frames[0][0]) == function:
            allocations, leaked, peak = (
                allocations + cost.allocations,
                leaked + cost.leaked,
                peak + cost.peak,
            )
    return allocations, leaked, peak


def document_call_site(doc: dict, function: str) -> tuple[int, int, str]:
    """(# total, persistent bytes, image) of the rows whose innermost frame is `function`."""
    count = persistent_bytes = 0
    images = set()
    for row in doc["allocations"]:
        if row["stack"] is None:
            continue
        frame = doc["frames"][doc["stacks"][row["stack"]][1]]
        if frame.get("symbol") == function:
            count += row["persistent"] + row["transient"]
            persistent_bytes += row["persistent_bytes"]
            images.add(doc["images"][frame["image"]]["name"])
    (image,) = images
    return count, persistent_bytes, image


# ------------------------------------------------------------------ heaptrack's own test data


def test_gui_99454_totals_are_heaptracks(gui_99454):
    data, raw = gui_99454
    # heaptrack's parser test: allocations 278534, temporary 35481, leaked 1047379, peak 12222213
    assert totals(data) == {
        "allocations": 278534,
        "temporary": 35481,
        "leaked": 1047379,
        "peak": 12222213,
    }
    # QHashData::allocateNode(int) in libQt5Core.so.5, inclusive = self:
    # allocations 5214, leaked 32, peak 56152
    assert call_site(data, QHASH) == (5214, 32, 56152)


def test_gui_99454_as_a_snapshot(gui_99454):
    _data, raw = gui_99454
    assert heaptrack.detect(raw, None)
    doc, counts = heaptrack.convert(raw, None, META)
    rows = doc["allocations"]
    # Persistent = still allocated at the end = heaptrack's leaked (no suppression in this file);
    # # Total = every allocation.
    assert sum(r["persistent_bytes"] for r in rows) == 1047379
    assert sum(r["persistent"] + r["transient"] for r in rows) == 278534
    # The call site as memdash's rows show it: 5214 allocations, 32 bytes still allocated.
    assert document_call_site(doc, QHASH) == (5214, 32, "libQt5Core.so.5")
    assert counts == {
        "heaptrack_allocations": 278534,
        "heaptrack_temporary": 35481,
        "heaptrack_peak_bytes": 12222213,
        "heaptrack_leaked_bytes": 1047379,
        "heaptrack_suppressed_bytes": 0,
        # heaptrack_print: "peak RSS (including heaptrack overhead): 146.57M" — the file's
        # largest `R` record, `R 8bc7` (35783 pages) of 0x1000 bytes (`I 1000 2d9aeb`)
        "heaptrack_peak_rss_bytes": 35783 * 4096,
        "heaptrack_runtime_ms": 3506,  # "total runtime: 3.506000s."
    }

    # Stacks start at main (or __libc_start_main, …), as heaptrack prints them: nothing above.
    # heaptrack stops at an instruction's own function only: where main is inlined into the
    # instruction (ProxyStyle::ProxyStyle() inlined into main), it goes on to
    # __libc_start_main.
    def parents_of(symbol: str) -> set:
        return {p for p, frame in doc["stacks"] if doc["frames"][frame].get("symbol") == symbol}

    assert parents_of("__libc_start_main") == {None}
    assert None in parents_of("main")
    assert not parents_of("_start")


def test_gui_99529_totals_are_heaptracks():
    data = heaptrack_data.read(text_of("heaptrack.heaptrack_gui.99529.zst"))
    # heaptrack's parser test: allocations 315255, temporary 40771, leaked 1046377,
    # peak 64840134; QHashData::allocateNode(int): allocations 5559, leaked 32, peak 68952
    assert totals(data) == {
        "allocations": 315255,
        "temporary": 40771,
        "leaked": 1046377,
        "peak": 64840134,
    }
    assert call_site(data, QHASH) == (5559, 32, 68952)


def test_gui_diff_matches_heaptracks_diff(gui_99454):
    later = heaptrack_data.read(text_of("heaptrack.heaptrack_gui.99529.zst"))
    earlier, _raw = gui_99454
    # heaptrack's diff of 99529 against 99454: allocations 36721, temporary 5290,
    # leaked -1002, peak 52617921
    assert {k: v - totals(earlier)[k] for k, v in totals(later).items()} == {
        "allocations": 36721,
        "temporary": 5290,
        "leaked": -1002,
        "peak": 52617921,
    }


def test_embedded_lsan_suppressions():
    raw = sample("heaptrack.embedded_lsan_suppressions.84207.zst")
    doc, counts = heaptrack.convert(raw, None, META)
    # heaptrack's test: allocations 5, temporary 0, peak 72714; leaked 5 with the embedded
    # suppressions applied (5 suppressed), 10 without them.
    assert counts["heaptrack_allocations"] == 5
    assert counts["heaptrack_temporary"] == 0
    assert counts["heaptrack_peak_bytes"] == 72714
    assert (counts["heaptrack_leaked_bytes"], counts["heaptrack_suppressed_bytes"]) == (5, 5)
    # heaptrack_print: "total memory leaked: 5B", "suppressed leaks: 5B"
    figures = heaptrack.tool_figures(counts)
    assert figures["total memory leaked"]["value"] == figures["suppressed leaks"]["value"] == 5
    # The snapshot keeps every byte still allocated (10): a suppression says "not a leak",
    # not "not allocated", so persistent is the unsuppressed figure.
    assert sum(r["persistent_bytes"] for r in doc["allocations"]) == 10


def test_gui_99454_tool_figures_are_heaptrack_prints():
    _doc, counts = heaptrack.convert(sample("heaptrack.heaptrack_gui.99454.zst"), None, META)
    # heaptrack_print 1.4.0 --disable-builtin-suppressions on this file, line by line:
    # "total runtime: 3.506000s.", "calls to allocation functions: 278534 (79444/s)",
    # "temporary memory allocations: 35481 (10120/s)", "peak heap memory consumption: 12.22M",
    # "peak RSS (including heaptrack overhead): 146.57M", "total memory leaked: 1.05M" (no
    # "suppressed leaks" line: nothing suppressed). Exact bytes: heaptrack's parser test (peak
    # 12222213, leaked 1047379); RSS 35783 pages of 4096 (146.57M).
    assert heaptrack.tool_figures(counts) == {
        "total runtime": {"value": 3506, "unit": "ms", "order": 0},
        "calls to allocation functions": {"value": 278534, "unit": "count", "order": 1},
        "temporary memory allocations": {"value": 35481, "unit": "count", "order": 2},
        "peak heap memory consumption": {"value": 12222213, "unit": "bytes", "order": 3},
        "peak RSS (including heaptrack overhead)": {
            "value": 35783 * 4096,
            "unit": "bytes",
            "order": 4,
        },
        "total memory leaked": {"value": 1047379, "unit": "bytes", "order": 5},
    }


# ------------------------------------------------------------------ a file written here


def test_leaky_program_figures_are_heaptrack_prints():
    doc, counts = heaptrack.convert(sample("heaptrack.leaky.zst"), None, META)
    # heaptrack_print --disable-builtin-suppressions: "calls to allocation functions: 115",
    # "temporary memory allocations: 102"; its flame graph files (-F, cost types peak and
    # leaked) add up to 177704 and 9168.
    assert counts["heaptrack_allocations"] == 115
    assert counts["heaptrack_temporary"] == 102
    assert counts["heaptrack_peak_bytes"] == 177704
    rows = doc["allocations"]
    assert sum(r["persistent_bytes"] for r in rows) == 9168
    assert sum(r["persistent"] + r["transient"] for r in rows) == 115
    # File version 3 writes the embedded suppression sized (`S 14 leak:suppressed_leak`).
    # heaptrack 1.4.0's analyzer reads the size as part of the pattern ("invalid suppression
    # line" on stderr) and suppresses nothing; memdash reads it as written: the 48 bytes of
    # `suppressed_leak` ("48B leaked over 1 calls from suppressed_leak") are suppressed.
    assert (counts["heaptrack_leaked_bytes"], counts["heaptrack_suppressed_bytes"]) == (
        9168 - 48,
        48,
    )
    # "5.00K leaked over 10 calls from keep": 10 blocks of 1000 bytes, 5 of them freed, from
    # main → keep → make_buffer (leaky.c:6); 24 bytes from main → make_buffer.
    by_path = {}
    for row in rows:
        path, node = [], row["stack"]
        while node is not None:
            parent, frame = doc["stacks"][node]
            path.append(doc["frames"][frame].get("symbol", "?"))
            node = parent
        key = (" > ".join(reversed(path)), row["category"])
        by_path[key] = (row["persistent"], row["persistent_bytes"], row["transient"])
    assert by_path[("main > keep > make_buffer", "Malloc 1000 Bytes")] == (5, 5000, 5)
    assert by_path[("main > make_buffer", "Malloc 24 Bytes")] == (1, 24, 0)
    # churn: 100 blocks of 64 bytes, each freed at once
    assert by_path[("main > churn", "Malloc 64 Bytes")] == (0, 0, 100)
    frame = next(f for f in doc["frames"] if f.get("symbol") == "make_buffer")
    # the source path as the recording machine had it
    assert (frame["file"], frame["line"]) == ("/tmp/memdash-heaptrack/leaky.c", 6)  # noqa: S108
    assert doc["images"][frame["image"]] == {"name": "leaky"}
    libc = next(i for i in doc["images"] if i["name"] == "libc.so.6")
    assert libc["system"] is True


def test_file_version_0_pointers():
    # heaptrack 1.0's records, hand-written: `+ <size> <trace> <pointer>`, `- <pointer>`.
    # 0x10 bytes allocated and freed at once (temporary), 0x20 kept, 0x10 again freed at once,
    # a release of a pointer never allocated (before heaptrack attached: skipped).
    content = (
        b"v 10000\ns main\ni 1000 0 1\nt 1 0\n"
        b"+ 10 1 aaa0\n- aaa0\n+ 20 1 bbb0\n+ 10 1 ccc0\n- ccc0\n- dddd\n"
    )
    doc, counts = heaptrack.convert(content, None, META)
    # allocations 3; temporary 2; at most 16 + 32 = 48 bytes at once; 32 left at the end
    assert counts["heaptrack_allocations"] == 3
    assert counts["heaptrack_temporary"] == 2
    assert counts["heaptrack_peak_bytes"] == 48
    assert counts["heaptrack_leaked_bytes"] == 32
    rows = {r["category"]: r for r in doc["allocations"]}
    assert rows["Malloc 16 Bytes"]["transient"] == 2 and rows["Malloc 16 Bytes"]["persistent"] == 0
    assert rows["Malloc 32 Bytes"]["persistent_bytes"] == 32
    assert doc["frames"] == [{"address": 0x1000, "symbol": "main"}]


@pytest.mark.parametrize("version_line", [b"v 10200", b"v 10100 1"])
def test_file_version_1_indexed_records(version_line):
    # Hand-written: file format 1 brought the `a <size> <trace>` allocation infos that `+` and
    # `-` name by index; heaptrack 1.0.0 (0x010200) wrote no file version yet. 0x10 bytes
    # allocated and freed at once (temporary), allocated again and kept.
    content = version_line + b"\ns main\ni 1000 0 1\nt 1 0\na 10 1\n+ 0\n- 0\n+ 0\n"
    _doc, counts = heaptrack.convert(content, None, META)
    assert counts["heaptrack_allocations"] == 2
    assert counts["heaptrack_temporary"] == 1
    assert (counts["heaptrack_peak_bytes"], counts["heaptrack_leaked_bytes"]) == (16, 16)


def test_zstd_is_read_within_its_limit():
    zeros = zstandard.ZstdCompressor().compress(b"\0" * (4 * 1024 * 1024))
    assert reading.unzstd_limited(zeros, 4 * 1024 * 1024) == b"\0" * (4 * 1024 * 1024)
    with pytest.raises(TooLarge):
        reading.unzstd_limited(zeros, 1024 * 1024, "content")
    with pytest.raises(InvalidUpload) as refused:
        reading.unzstd_limited(zeros + b"trailing", 8 * 1024 * 1024, "content")
    assert "data after its end at byte" in str(refused.value)
    # two frames are one stream, as `zstd -d` reads them
    two = zstandard.ZstdCompressor().compress(b"ab") + zstandard.ZstdCompressor().compress(b"c")
    assert reading.unzstd_limited(two, 10) == b"abc"


# ------------------------------------------------------------------ detection and refusals


def test_detected_by_content_compressed_or_not():
    raw = sample("heaptrack.leaky.zst")
    assert formats.detect(raw, None).name == "heaptrack"
    assert formats.detect(text_of("heaptrack.leaky.zst"), None).name == "heaptrack"
    assert not heaptrack.detect(b"v is not hex\n", None)


def refusal(content: bytes) -> InvalidUpload:
    with pytest.raises(InvalidUpload) as caught:
        heaptrack.convert(content, None, META)
    return caught.value


def test_refusals_name_the_format_and_line():
    good = b"v 10400 3\nX ./a\ns 4 main\ni 1000 0 1\nt 1 0\na 10 1\n"
    assert heaptrack.convert(good + b"+ 0\n", None, META)[1]["heaptrack_allocations"] == 1
    error = refusal(good + b"+ 1\n")
    assert error.path == "line 7"
    assert "heaptrack data file" in str(error) and "allocation info 1 is not defined" in str(error)
    error = refusal(good + b"+ zz\n")
    assert error.path == "line 7" and "hexadecimal" in str(error)
    assert refusal(good + b"t 9 0\n").path == "line 7"  # an ip not read yet
    assert refusal(b"v 10600 4\n").path == "line 1"  # a file format newer than 3
    assert refusal(good + b"m 1 /lib/libc.so\n").path == "line 7"  # not an interpreted file
    cut = sample("heaptrack.leaky.zst")[:-20]
    error = refusal(cut)
    assert error.path == "content" and "ends in the middle of a frame" in str(error)


# ------------------------------------------------------------------ through the upload API


@pytest.mark.django_db
def test_upload_zstd_and_gzip(upload):
    response = upload(sample("heaptrack.leaky.zst"), content_type="application/zstd", query=BUILD)
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["format"] == "heaptrack"
    assert body["counts"]["heaptrack_peak_bytes"] == 177704
    snapshot = Snapshot.objects.get(pk=body["snapshot"]["id"])
    assert (snapshot.persistent_bytes, snapshot.persistent + snapshot.transient) == (9168, 115)
    assert snapshot.source_format == "heaptrack"
    # heaptrack before 1.2 wrote gzip: the same data gzip-compressed reads the same
    gzipped = gzip.compress(text_of("heaptrack.leaky.zst"))
    response = upload(gzipped, content_type="application/gzip", query=BUILD + "&session=2")
    assert response.status_code == 202, response.json()
    assert response.json()["counts"]["heaptrack_temporary"] == 102


@pytest.mark.django_db
def test_snapshot_page_and_json_say_what_heaptrack_reported(upload, member_client, api_client):
    response = upload(sample("heaptrack.leaky.zst"), content_type="application/zstd", query=BUILD)
    assert response.status_code == 202, response.json()
    snapshot_id = response.json()["snapshot"]["id"]
    # heaptrack_print --disable-builtin-suppressions (heaptrack.leaky.zst.print.txt): "total
    # runtime: 0.00s." (2 ms: "calls to allocation functions: 115 (57500/s)" is 115 / 0.002 s),
    # "temporary memory allocations: 102 (51000/s)", "peak
    # heap memory consumption: 177.70K" (177704, its flame graph's sum), "peak RSS (including
    # heaptrack overhead): 4.33M", "total memory leaked: 9.17K" — 9168 with heaptrack 1.4.0,
    # which applies none of the file's suppressions; 9120 + 48 suppressed as the file says
    # (see test_leaky_program_figures_are_heaptrack_prints).
    data = api_client.get(f"/api/v1/snapshots/{snapshot_id}").json()
    assert data["source_format"] == "heaptrack"
    figures = {f["label"]: (f["value"], f["unit"]) for f in data["tool_figures"]}
    assert [f["label"] for f in data["tool_figures"]][:4] == [
        "total runtime",
        "calls to allocation functions",
        "temporary memory allocations",
        "peak heap memory consumption",
    ]
    assert figures["total runtime"] == (2, "ms")
    assert figures["calls to allocation functions"] == (115, "count")
    assert figures["temporary memory allocations"] == (102, "count")
    assert figures["peak heap memory consumption"] == (177704, "bytes")
    assert round(figures["peak RSS (including heaptrack overhead)"][0] / 1e6, 2) == 4.33
    assert figures["total memory leaked"] == (9120, "bytes")
    assert figures["suppressed leaks"] == (48, "bytes")
    page = member_client.get(f"/snapshots/{snapshot_id}/").content.decode()
    assert "What heaptrack reported" in page
    # 177704 bytes through the bytes filter, the exact figure in its title
    assert 'peak heap memory consumption <strong><span title="177,704 bytes">173.54 KiB' in page
    assert "calls to allocation functions <strong>115</strong>" in page
    assert "total runtime <strong>2 ms</strong>" in page


@pytest.mark.django_db
def test_upload_refused_with_line(upload):
    response = upload(b"v 10400 3\n+ 0\n", content_type="text/plain", query=BUILD)
    assert response.status_code == 400
    assert response.json()["path"] == "line 2"
    assert not Snapshot.objects.exists()
