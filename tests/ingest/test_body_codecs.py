"""bzip2 and xz bodies (`memdash.core.logic.streams`, in `reading.BODY_CODECS` beside gzip): read
as bunzip2(1) and xz(1) read them (concatenated streams joined; xz's zero padding between and
after streams skipped), anything else refused with where it starts, and counted while they are
decompressed against the same caps as gzip: the codec's limit, and the parse budget of the
format their content is (MEMDASH_MAX_PARSE_MEMORY_BYTES ÷ its factor), refused while reading."""

from __future__ import annotations

import bz2
import io
import lzma
from pathlib import Path

import pytest

from memdash.allocations.models import Snapshot
from memdash.core.logic import reading, streams
from memdash.core.logic.errors import InvalidUpload, TooLarge
from memdash.ingest.models import Upload

KTORRENT = Path(__file__).resolve().parents[1] / "data/massif/massif.out.ktorrent"  # 473,239 B


def xz(data: bytes) -> bytes:
    return lzma.compress(data, format=lzma.FORMAT_XZ)


CODECS = {"bzip2": bz2.compress, "xz": xz}


@pytest.fixture(params=[streams.CHUNK, 7], ids=["1 MiB reads", "7-byte reads"])
def chunk(request, monkeypatch):
    """Every case read in one piece and in reads of 7 bytes (and 7 bytes out at a time), so
    that a stream's magic, its end and the padding fall across reads."""
    monkeypatch.setattr(streams, "CHUNK", request.param)
    return request.param


def content(body: bytes, limit: int = 1 << 20) -> bytes:
    pieces = reading.body_pieces(io.BytesIO(body), limit)
    assert pieces is not None, "not recognised as compressed"
    return b"".join(pieces)


@pytest.mark.parametrize("codec", CODECS)
def test_what_each_codec_reads(chunk, codec):
    pack = CODECS[codec]
    assert content(pack(b"hello ")) == b"hello "
    assert content(pack(b"hello ") + pack(b"world")) == b"hello world"  # as `bunzip2`/`xz -d`
    assert content(pack(b"")) == b""


def test_xz_stream_padding_is_skipped(chunk):
    # xz(1): "Stream Padding" of zero bytes, a multiple of four, between and after streams.
    body = xz(b"hello ") + b"\0" * 8 + xz(b"world") + b"\0" * 4
    assert content(body) == b"hello world"  # `xz -dc` prints "hello world" (exit 0)


@pytest.mark.parametrize("codec", CODECS)
def test_what_each_codec_refuses(chunk, codec):
    pack = CODECS[codec]
    one = pack(b"hello " * 100)
    cases = [
        (one + b"xyz", f"data after its end at byte {len(one)}"),
        (one[:-6], "ends in the middle of a stream"),
        (one[:10] + b"\xff" * 16 + one[26:], f"corrupt {codec} stream"),
    ]
    if codec == "bzip2":  # bzip2 has no padding: zeros after a stream are data after its end
        cases.append((one + b"\0\0\0\0", f"data after its end at byte {len(one)}"))
    for body, words in cases:
        with pytest.raises(InvalidUpload) as refused:
            content(body)
        assert words in refused.value.message, (body[-8:], refused.value.message)


@pytest.mark.parametrize("codec", CODECS)
def test_the_limit_counts_every_stream_and_stops_a_bomb(chunk, codec):
    pack = CODECS[codec]
    two = pack(b"a" * 600) + pack(b"b" * 400)
    assert content(two, limit=1000) == b"a" * 600 + b"b" * 400
    with pytest.raises(TooLarge):
        content(two, limit=999)
    bomb = pack(bytes(64 * 1024 * 1024))  # 64 MiB of zeros in a few KiB
    assert len(bomb) < 64 * 1024
    with pytest.raises(TooLarge, match="larger than 1048576 bytes"):
        content(bomb, limit=1024 * 1024)


@pytest.mark.django_db
@pytest.mark.parametrize("codec", CODECS)
def test_a_compressed_text_report_is_costed_by_its_format_while_it_is_read(upload, settings, codec):
    """As test_parse_memory's massif case, compressed: 473,239 × 30 = 14,197,170 is over
    14,000,000; read up to 14,000,000 ÷ 30 = 466,666 bytes, then refused, the body not kept."""
    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = 14_000_000
    body = CODECS[codec](KTORRENT.read_bytes())
    response = upload(body, content_type="application/octet-stream")
    assert response.status_code == 413, response.content
    answer = response.json()
    assert answer["path"] == "content"
    assert (
        "the content is more than 466,666 bytes decompressed; a worker parsing massif needs "
        "about 30 " in answer["error"]
    )
    assert not Upload.objects.get(pk=answer["id"]).file
    assert Snapshot.objects.count() == 0

    settings.MEMDASH_MAX_PARSE_MEMORY_BYTES = 473_239 * 30  # exactly the estimate: it fits
    response = upload(body, content_type="application/octet-stream", query="build_version=1.0")
    assert response.status_code == 202 and response.json()["status"] == "done", response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("codec", CODECS)
def test_a_corrupt_body_is_refused_with_the_codec_named(upload, codec):
    body = CODECS[codec](KTORRENT.read_bytes())[:-10]
    response = upload(body, content_type="application/octet-stream")
    assert response.status_code == 400, response.content
    assert f"corrupt {codec} stream" in response.json()["error"]
