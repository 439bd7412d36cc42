"""The one capped gunzip (`memdash.core.logic.reading.gunzip_limited`), for upload bodies and for
gzip inside a format. What may follow a gzip member is what gzip(1) 1.12 accepts without a warning:
another member (`gzip -dc` prints both contents, exit 0) or zero bytes to the end (padding,
exit 0). What gzip(1) calls "trailing garbage" (exit 2, "decompression OK, trailing garbage
ignored"), zeros then another member included, is refused here, with where it starts."""

from __future__ import annotations

import gzip
import io
import zlib

import orjson
import pytest

from memdash.allocations.models import Snapshot
from memdash.core.logic import reading
from memdash.core.logic.errors import InvalidUpload, TooLarge
from memdash.core.logic.reading import gunzip_limited
from memdash.ingest.writes.parsers import pprof
from tests.samples import spec_example

HELLO = gzip.compress(b"hello ", mtime=0)
WORLD = gzip.compress(b"world", mtime=0)


def gunzip(data: bytes, limit: int = 1 << 20, path: str = "") -> bytes:
    return gunzip_limited(io.BytesIO(data), limit, path)


@pytest.fixture(params=[reading.CHUNK, 7], ids=["1 MiB reads", "7-byte reads"])
def chunk(request, monkeypatch):
    """Every case read in one piece and in reads of 7 bytes, so that a member, its end, the
    padding and a second gzip header each fall across reads."""
    monkeypatch.setattr(reading, "CHUNK", request.param)
    return request.param


@pytest.mark.parametrize(
    "data, content",
    [
        (HELLO, b"hello "),
        (HELLO + WORLD, b"hello world"),  # concatenated members: one stream, as gzip -dc reads it
        (HELLO + WORLD + HELLO, b"hello worldhello "),
        (HELLO + b"\0" * 100, b"hello "),  # zero padding to the end: ignored
        (HELLO + WORLD + b"\0", b"hello world"),
        (gzip.compress(b"", mtime=0), b""),
    ],
)
def test_what_gunzip_reads(chunk, data, content):
    assert gunzip(data) == content
    assert gzip.decompress(data) == content  # Python's gzip module reads them the same


@pytest.mark.parametrize(
    "data, words",
    [
        (HELLO + b"xyz", f"data after its end at byte {len(HELLO)}"),
        (HELLO + b"\0\0\0x", f"data after its end at byte {len(HELLO) + 3}"),
        (HELLO + b"\0" + WORLD, f"data after its end at byte {len(HELLO) + 1}"),
        (HELLO + WORLD + b"\x1f", "ends in the middle of a member"),  # a second header cut short
        (HELLO[:-4], "ends in the middle of a member"),  # no trailer
        (HELLO[:12], "ends in the middle of a member"),
        (HELLO[:10] + b"\xff" * 8 + HELLO[18:], "corrupt gzip stream: Error -1 Invalid deflate"),
        (HELLO[:-1] + bytes([HELLO[-1] ^ 1]), "corrupt gzip stream: Error -6"),  # bad length
        (HELLO[:-8] + bytes([HELLO[-8] ^ 1]) + HELLO[-7:], "corrupt gzip stream: Error -6"),  # CRC
        (b"plain text", "does not start as gzip does"),
        (b"", "it is empty"),
    ],
)
def test_what_gunzip_refuses(chunk, data, words):
    with pytest.raises(InvalidUpload) as refused:
        gunzip(data, path="content")
    assert words in refused.value.message
    assert refused.value.path == "content"


def test_the_cap_counts_every_member_and_stops_a_bomb(chunk):
    two = gzip.compress(b"a" * 600, mtime=0) + gzip.compress(b"b" * 400, mtime=0)
    assert gunzip(two, limit=1000) == b"a" * 600 + b"b" * 400
    with pytest.raises(TooLarge):
        gunzip(two, limit=999)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = compressor.compress(b"\0" * (64 * 1024 * 1024)) + compressor.flush()
    with pytest.raises(TooLarge) as refused:
        gunzip(bomb, limit=100_000, path="content")
    assert refused.value.status == 413 and refused.value.path == "content"


def test_small_steps_in_and_out(monkeypatch):
    # Reads of 64 bytes, at most 64 bytes out per step: a body 120 times its gzip comes out
    # whole, each step counted against the cap.
    monkeypatch.setattr(reading, "CHUNK", 64)
    body = bytes(range(256)) * 300
    assert gunzip(gzip.compress(body, mtime=0), limit=len(body)) == body
    with pytest.raises(TooLarge):
        gunzip(gzip.compress(body, mtime=0), limit=len(body) - 1)


def test_pprof_reads_its_gzip_with_the_same_reader():
    with pytest.raises(InvalidUpload) as refused:
        pprof.to_snapshot_document(HELLO + b"xyz", None, {})
    assert refused.value.path == "content"
    assert "data after its end" in refused.value.message


@pytest.mark.django_db
def test_an_upload_body_of_two_members_is_one_document(upload):
    body = orjson.dumps(spec_example())
    half = len(body) // 2
    response = upload(gzip.compress(body[:half]) + gzip.compress(body[half:]))
    assert response.status_code == 202
    assert response.json()["status"] == "done"


@pytest.mark.django_db
def test_an_upload_body_with_trailing_garbage_is_refused(upload):
    response = upload(gzip.compress(orjson.dumps(spec_example())) + b"garbage")
    assert response.status_code == 400
    assert response.json()["status"] == "rejected"
    assert "data after its end" in response.json()["error"]
    assert Snapshot.objects.count() == 0
