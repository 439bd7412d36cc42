"""What parsing an upload would cost a worker, told before parsing
(`MEMDASH_MAX_PARSE_MEMORY_BYTES`): refused on receipt (413, the body not kept) when the
content's size and format are known there, else by the worker before it parses (413, the upload
rejected with the reason), nothing stored. Content is read no further than the setting ÷ its
format's factor: past that, it is refused as "more than" that many bytes, while it is read.

Expected figures: the content's size (the sample's bytes, `ls -l` in tests/data/PROVENANCE.md, or
`len` of the document sent) × the format's factor in `parse_memory.FACTORS` (snapshot 8, massif
30, heaptrack 25, retain cycles 150), rounded up; the setting is chosen around it by hand.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import orjson
import pytest
import zstandard

from memdash.allocations.models import Snapshot
from memdash.cycles.models import CycleReport
from memdash.ingest.models import Upload
from memdash.ingest.writes import formats
from memdash.ingest.writes.parse_memory import FACTORS
from tests.samples import spec_example

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/data"
sys.path.insert(0, str(ROOT / "bench"))
from others import cycle_docs  # noqa: E402

pytestmark = pytest.mark.django_db

KTORRENT = DATA / "massif/massif.out.ktorrent"  # 473,239 bytes
HEAPTRACK_GUI = DATA / "heaptrack/heaptrack.heaptrack_gui.99529.zst"  # 9,956,450 bytes of text
HEAPTRACK_LEAKY = DATA / "heaptrack/heaptrack.leaky.zst"  # 2,651 bytes of text
OCTETS, BUILD = "application/octet-stream", "build_version=1.0&build_number=1"


def test_the_factors_these_figures_are_worked_out_with():
    assert (FACTORS["memdash.snapshot"], FACTORS["massif"]) == (8, 30)
    assert (FACTORS["heaptrack"], FACTORS["memdash.retain-cycles"]) == (25, 150)


def refused(response, status: int = 413) -> tuple[dict, Upload]:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["status"] == "rejected" and body["path"] == "content"
    assert "MEMDASH_MAX_PARSE_MEMORY_BYTES" in body["error"]
    assert Snapshot.objects.count() == 0
    return body, Upload.objects.get(pk=body["id"])


def test_a_snapshot_over_the_setting_is_refused_on_receipt(upload, settings):
    content = orjson.dumps(spec_example())
    size = len(content)
    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = size * 8 - 1  # one byte short of the estimate
    body, row = refused(upload(gzip.compress(content)))
    # Read no further than (size × 8 - 1) ÷ 8 = size - 1 bytes (rounded down): one byte short.
    assert f"the content is more than {size - 1:,} bytes decompressed" in body["error"]
    estimate = (
        f"memdash.snapshot needs about 8 bytes of memory per byte of it "
        f"(more than {(size - 1) * 8:,} bytes)"
    )
    assert estimate in body["error"]
    assert f"MEMDASH_MAX_PARSE_MEMORY_BYTES ({size * 8 - 1:,} bytes)" in body["error"]
    assert not row.file  # refused on receipt: the body was never kept

    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = size * 8  # exactly the estimate: it fits
    response = upload(gzip.compress(content))
    assert response.status_code == 202 and response.json()["status"] == "done"


def test_a_text_report_is_costed_by_its_format(upload, settings):
    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = 14_000_000  # 473,239 × 30 = 14,197,170
    body, row = refused(upload(KTORRENT.read_bytes(), content_type="text/plain"))
    # Read up to 14,000,000 ÷ 30 = 466,666 bytes (rounded down), then refused while reading.
    assert (
        "the content is more than 466,666 bytes decompressed; a worker parsing massif needs "
        "about 30 " in (body["error"])
    )
    assert (
        "(more than 13,999,980 bytes), more than MEMDASH_MAX_PARSE_MEMORY_BYTES (14,000,000 "
        "bytes)" in (body["error"])
    )
    assert not row.file


def test_a_zstd_frame_that_declares_its_size_is_refused_on_receipt(upload, settings):
    text = zstandard.ZstdDecompressor().stream_reader(HEAPTRACK_LEAKY.open("rb")).read()
    declared = zstandard.ZstdCompressor().compress(text)  # the size in its frame header
    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = 60_000  # 2,651 × 25 = 66,275
    body, row = refused(upload(declared, content_type=OCTETS, query=BUILD))
    assert "the content is 2,651 bytes decompressed; a worker parsing heaptrack" in body["error"]
    assert "(66,275 bytes)" in body["error"]
    assert not row.file


@pytest.mark.slow  # a worker process
def test_a_zstd_stream_of_unknown_size_is_refused_by_the_worker(upload, settings):
    # heaptrack streams its file: no size in the frame, so only decompressing tells. The worker
    # decompresses it up to 100,000,000 / 25 = 4,000,000 bytes, then refuses it (9,956,450).
    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = 100_000_000
    body, row = refused(upload(HEAPTRACK_GUI.read_bytes(), content_type=OCTETS, query=BUILD))
    assert "the content is more than 4,000,000 bytes decompressed" in body["error"]
    assert "parsing heaptrack needs about 25 bytes" in body["error"]
    assert row.file  # received, then refused by the worker: kept for a while, as rejected bodies

    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = 1024**3  # 9,956,450 × 25 = 248,911,250: fits
    # (another build: the same bytes with the same fields would answer the refused upload)
    response = upload(HEAPTRACK_GUI.read_bytes(), content_type=OCTETS, query=BUILD + "0")
    assert response.status_code == 202 and response.json()["status"] == "done"


def test_a_format_named_past_the_head_is_refused_by_the_worker(upload, settings):
    doc = next(cycle_docs(clusters=1000, per_doc=1000))
    late = {"cycles": doc.pop("cycles"), **doc}  # "format" past the first 64 KiB
    content = orjson.dumps(late)
    size = len(content)
    assert content.index(b'"format"') > 64 * 1024
    # On receipt the head names no format: the cheapest factor (8) is all that is sure, and
    # size × 8 fits. The worker finds memdash.retain-cycles (150), which does not.
    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = size * 8 * 2
    assert size * 150 > size * 8 * 2
    body, row = refused(upload(gzip.compress(content)))
    assert (
        f"the content is {size:,} bytes decompressed; a worker parsing memdash.retain-cycles"
        in (body["error"])
    )
    assert row.file
    assert CycleReport.objects.count() == 0


def test_costed_format_by_head_and_by_whole_content():
    named = b'{"format": "memdash.sessions", "version": 1, "sessions": []}'
    assert formats.costed_format(named) == "memdash.sessions"
    unnamed = b'[{"className": "ChatCell", "aliveObjects": 1, "instanceSize": 16}]'
    assert formats.costed_format(unnamed) == "memdash.snapshot"  # head only: the cheapest
    assert formats.costed_format(unnamed[:40], unnamed) == "matrix"  # whole: the dearest unnamed
    assert formats.costed_format(KTORRENT.read_bytes()[:65536]) == "massif"
    assert formats.costed_format(HEAPTRACK_LEAKY.read_bytes()) == "heaptrack"
    assert formats.costed_format(gzip.compress(b"x")) == "pprof"  # gzip inside: only pprof
    assert formats.costed_format(b"hello, not a report\n") is None  # nothing parses it
