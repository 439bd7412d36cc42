"""One memory budget for every body: for each format (and for text no format reads, each
compression, gzip members, the events shape of a snapshot), content just over what the budget
affords is refused with the setting named, and a real worker process's peak stays under the
budget while it refuses it.

The bodies are received under a larger setting (a web machine set otherwise, or an older
version), so that a worker, started as its own process for each with
MEMDASH_MAX_PARSE_MEMORY_BYTES = BUDGET, is what refuses them: it resets its peak
(/proc/self/clear_refs) before the upload and reports its peak RSS (VmHWM) over its RSS then.
Sizes are worked out from the factors by hand: BUDGET ÷ factor is what a format may hold
(snapshot 8: 6 MiB; events 11: 4.4 MiB; sessions 10; retain cycles 150; pprof 12; massif 30;
leak logs 18; heaptrack 25; unknown text as pprof, 12).
"""

from __future__ import annotations

import gzip
import json
import sys
import zlib

import orjson
import pytest

from memdash.ingest.writes import uploads as services
from tests.ingest.live_database import ROOT, publish

sys.path.insert(0, str(ROOT / "bench"))
from parse_memory import (  # noqa: E402
    HEAPTRACK_SAMPLE,
    cycles,
    fbat,
    massif,
    matrix,
    pprof,
    sanitizer,
    sessions,
    snapshot,
    valgrind,
)

pytestmark = pytest.mark.slow  # a worker process per format, bodies of tens of MiB

MIB = 1024 * 1024
BUDGET = 48 * MIB
BUILD = {"build_version": "9.0.0", "build_number": "900"}
WORKER = """
import json, re, sys
from memdash.ingest.models import Upload
from memdash.ingest.tasks import process_upload

def status():
    text = open("/proc/self/status").read()
    found = {{k: re.search(k + r":\\s+(\\d+)", text) for k in ("VmRSS", "VmHWM")}}
    return {{k: int(match.group(1)) * 1024 for k, match in found.items()}}

for upload_id in [{upload_id}]:
    upload = Upload.objects.select_related("app").get(pk=upload_id)
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # the peak starts again from here
    before = status()["VmRSS"]
    process_upload(upload)
    print(json.dumps({{"id": upload_id, "status": upload.status, "error": upload.error,
                      "error_status": upload.error_status, "grew": status()["VmHWM"] - before}}))
"""


def sized(generate, units: int, over: int) -> bytes:
    """Content of `generate` just over `over` bytes (its units scaled from probes, then raised
    by a twentieth until it is over)."""
    content = generate(units)
    for _ in range(3):  # sizes are not proportional to units (fixed parts): scale again
        units = max(1, int(units * over * 1.02 / len(content)))
        content = generate(units)
    while len(content) <= over:
        units = int(units * 1.05) + 1
        content = generate(units)
    assert len(content) < over * 1.3, (len(content), over)
    return content


def events_snapshot(over: int) -> bytes:
    """A snapshot of raw allocator events (the generic way, factor 11), between BUDGET ÷ 11 and
    BUDGET ÷ 8: read whole (its head names a snapshot), refused for its shape."""
    doc = {"format": "memdash.snapshot", "version": 1,
           "app": {"id": "com.example.chat", "platform": "ios"},
           "build": {"version": "9.0.0", "number": "900"},
           "device": {"id": "D1", "model": "iPhone14,5", "os": "iOS 17.4"},
           "captured_at": "2026-11-20T10:00:00+00:00", "frames": ["main"], "stacks": [[None, 0]],
           "threads": ["main"], "events": []}  # fmt: skip
    event = {"fn": "malloc", "t_ms": 1, "address": 4096, "size": 32, "category": "C",
             "stack": 0, "thread": 0}  # fmt: skip
    doc["events"] = [{**event, "address": 4096 + 16 * i} for i in range(over // 90)]
    return orjson.dumps(doc)


def gzip_members(content: bytes, members: int) -> bytes:
    return b"".join(gzip.compress(content[i::members], 1) for i in range(members))


def zero_bomb(members: int, size: int) -> bytes:
    """`members` gzip members of `size` zero bytes each, compressed a MiB at a time."""
    out = b""
    for _ in range(members):
        packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        out += b"".join(packer.compress(bytes(MIB)) for _ in range(size // MIB)) + packer.flush()
    return out


# name: (body, words the refusal holds besides the setting's name)
def cases() -> dict[str, tuple[bytes, str]]:
    return {
        "snapshot": (gzip.compress(sized(snapshot, 2000, BUDGET // 8), 1), "memdash.snapshot"),
        "snapshot events": (events_snapshot(BUDGET // 11 + MIB), "memdash.snapshot.events"),
        "sessions": (sized(sessions, 500, BUDGET // 10), "memdash.sessions"),
        "retain cycles": (sized(cycles, 50, BUDGET // 150), "memdash.retain-cycles"),
        # FBAllocationTracker names no format: the worker costs it as the dearest unnamed (28)
        "fballocationtracker": (sized(fbat, 2000, BUDGET // 28), "matrix"),
        "matrix": (sized(matrix, 2000, BUDGET // 28), "matrix"),
        "pprof": (gzip.compress(sized(pprof, 2000, BUDGET // 12), 1), "pprof"),
        "massif": (sized(massif, 20, BUDGET // 30), "massif"),
        "sanitizer": (sized(sanitizer, 200, BUDGET // 18), "sanitizer.leaks"),
        "valgrind": (sized(valgrind, 200, BUDGET // 18), "valgrind.memcheck-log"),
        "heaptrack": (HEAPTRACK_SAMPLE.read_bytes(), "heaptrack"),
        "unknown text, two gzip members": (
            gzip_members(b"x" * (BUDGET // 12 + MIB), 2),
            "text no format recognises",
        ),
        "gzip bomb of three members": (zero_bomb(3, 64 * MIB), "text no format recognises"),
    }


@pytest.mark.django_db(transaction=True)
def test_each_format_just_over_the_budget_is_refused_naming_it_and_the_worker_stays_under(
    app, tmp_path, settings
):
    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = 1 << 40  # the web machine that let them in
    settings.MEMDASH_MAX_DECOMPRESSED_BYTES = 1 << 40
    stored = {}
    for name, (body, words) in cases().items():
        upload, _ = services.receive_upload(app, [body], fields=BUILD, run=False)
        assert upload.status == "queued", (name, upload.error)
        stored[upload.pk] = (name, words)
    live = publish(tmp_path, MEMDASH_MAX_PARSE_MEMORY_BYTES=str(BUDGET))
    results = []
    for upload_id in stored:  # a fresh process each: its peak is this upload's alone
        out = live.run("shell", "-c", WORKER.format(upload_id=upload_id), timeout=600)
        results += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(results) == len(stored)
    for result in results:
        name, words = stored[result["id"]]
        print(f"{name}: peak {result['grew'] / MIB:.1f} MiB over the worker's start")  # the report
        assert (result["status"], result["error_status"]) == ("rejected", 413), (name, result)
        assert "MEMDASH_MAX_PARSE_MEMORY_BYTES" in result["error"], (name, result)
        assert words in result["error"], (name, result)
        assert result["grew"] < BUDGET, (name, result["grew"])
    assert live.count("snapshots_snapshot") == 0


@pytest.mark.django_db
def test_the_web_process_reads_no_further_than_the_budget_of_unknown_text(upload, settings):
    """Two gzip members of 256 MiB of `x`: refused on receipt once 1 GiB ÷ 12 (pprof, the
    cheapest text format) = 89,478,485 bytes are read, the body not kept."""
    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = 1024**3
    body = b"".join(gzip_members_of_repeats(b"x", 256 * MIB) for _ in range(2))
    answer = upload(body, content_type="application/octet-stream")
    assert answer.status_code == 413, answer.content
    error = answer.json()["error"]
    assert "the content is more than 89,478,485 bytes decompressed" in error
    assert "text no format recognises" in error and "MEMDASH_MAX_PARSE_MEMORY_BYTES" in error


def gzip_members_of_repeats(byte: bytes, size: int) -> bytes:
    """One gzip member of `size` repeats of `byte`, compressed a MiB at a time."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = byte * MIB
    return b"".join(packer.compress(chunk) for _ in range(size // MIB)) + packer.flush()
