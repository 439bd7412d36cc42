"""Reading upload bodies within limits: streamed to disk while hashing, gunzipped with a cap
checked while decompressing (a small gzip bomb never fills memory).

`gunzip_limited` is memdash's one gunzip: for an upload's body (`read_content`) and for gzip
inside a format (pprof's .pb.gz). What may follow a gzip member is settled here, as gunzip(1)
reads it: another member (concatenated members are one stream; their contents are joined), or
zero bytes to the end (block padding, ignored). Anything else is refused rather than dropped
unread, and so is a stream that ends inside a member. It inflates with Intel's ISA-L (`isal`),
zlib's interface at 4-5 times its speed: every upload body is read through twice (its digest on
receipt, its parse in the worker).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, cast

import zstandard
from isal import isal_zlib

from memdash.core.logic.errors import InvalidUpload, TooLarge, UploadRefused

if TYPE_CHECKING:
    from _typeshed import SupportsRead

CHUNK = 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"
GZIP_WBITS = 16 + isal_zlib.MAX_WBITS  # a gzip header and trailer around the deflate data
CORRUPT = "corrupt gzip stream"
# isal's stubs declare its error class as an instance of Exception.
INFLATE_ERROR = cast("type[Exception]", isal_zlib.error)


@dataclass
class Received:
    size: int
    sha256: str


def copy_limited(chunks: Iterable[bytes], out: BinaryIO, limit: int) -> Received:
    """Write chunks to `out`, hashing them; refuse as soon as more than `limit` bytes came."""
    digest = hashlib.sha256()
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"the body is larger than the limit of {limit} bytes")
        digest.update(chunk)
        out.write(chunk)
    return Received(size=size, sha256=digest.hexdigest())


def whole_body(chunks: Iterable[bytes], declared: int) -> Iterator[bytes]:
    """The chunks of a body, refused at its end when fewer bytes came than `declared` (the
    connection closed early): a partial body is never stored as if it were whole."""
    size = 0
    for chunk in chunks:
        size += len(chunk)
        yield chunk
    if size < declared:
        raise InvalidUpload(
            f"the body ended after {size} of the {declared} bytes its Content-Length declares "
            "(the connection closed early): send it again",
            "Content-Length",
        )


def read_chunks(stream: SupportsRead[bytes], chunk_size: int = CHUNK) -> Iterator[bytes]:
    """A stream (a file, a request body) in chunks, for `copy_limited`."""
    while chunk := stream.read(chunk_size):
        yield chunk


def gunzip_limited(stream: BinaryIO, limit: int, path: str = "") -> bytes:
    """The decompressed content of a gzip stream (all its members), refusing past `limit` bytes
    out; errors name `path`. See the module's docstring for what may follow a member."""
    out = io.BytesIO()
    for piece in gunzip_pieces(stream, limit, path):
        out.write(piece)
    return out.getvalue()


def gunzip_pieces(stream: BinaryIO, limit: int, path: str = "") -> Iterator[bytes]:
    """`gunzip_limited`'s content piece by piece (at most CHUNK bytes each), for a reader that
    needs not hold all of it (the content's digest)."""
    produced = read = members = 0
    member: isal_zlib.Decompress | None = None  # the member being read; None between members
    padding = False  # zero bytes followed the last member: nothing else may come

    def counted(data: bytes) -> bytes:
        nonlocal produced
        produced += len(data)
        if produced > limit:
            raise TooLarge(f"the decompressed body is larger than {limit} bytes", path)
        return data

    try:
        while chunk := stream.read(CHUNK):
            read += len(chunk)
            while chunk:
                if member is None:
                    starts_member = GZIP_MAGIC.startswith(chunk[:2])  # or a chunk ends after 1f
                    if padding or (members and not starts_member):
                        rest = chunk.lstrip(b"\0")  # zero padding may end the stream
                        if rest:
                            at = read - len(rest)
                            raise InvalidUpload(f"{CORRUPT}: data after its end at byte {at}", path)
                        padding = True
                        break
                    if not starts_member:
                        raise InvalidUpload(f"{CORRUPT}: it does not start as gzip does", path)
                    member = isal_zlib.decompressobj(wbits=GZIP_WBITS)
                    members += 1
                yield counted(member.decompress(chunk, CHUNK))
                chunk = member.unconsumed_tail
                if member.eof:
                    chunk, member = member.unused_data, None
        if member is not None:
            # The input ended inside a member. Whatever the inflater still holds comes out
            # (counted), and only a member that ends with it is whole.
            yield counted(member.flush())
            if not member.eof:
                raise InvalidUpload(f"{CORRUPT}: it ends in the middle of a member", path)
    except INFLATE_ERROR as exc:
        raise InvalidUpload(f"{CORRUPT}: {exc}", path) from None
    if not members:
        raise InvalidUpload(f"{CORRUPT}: it is empty", path)


def gunzip_prefix(raw: bytes, size: int) -> bytes:
    """The first `size` decompressed bytes of gzip data, for format sniffing (never raises)."""
    try:
        return isal_zlib.decompressobj(wbits=GZIP_WBITS).decompress(raw[: 64 * 1024], size)
    except INFLATE_ERROR:
        return b""


def read_content(stream: BinaryIO, limit: int) -> bytes:
    """The upload's content: gunzipped when it starts with the gzip magic, else as is."""
    head = stream.read(2)
    stream.seek(0)
    if head == GZIP_MAGIC:
        return gunzip_limited(stream, limit)
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"the body is larger than {limit} bytes")
    return data


# What JSON ignores around a document (RFC 8259: ws). Held back at most this much: a body with
# more whitespace around its content counts it as content (it is not worth recognising).
JSON_WHITESPACE = b" \t\r\n"
HELD_WHITESPACE = 1024 * 1024


class ContentDigest:
    """The sha256 of an upload's content, fed its decompressed bytes in pieces: a JSON document
    (its first byte other than whitespace is `{` or `[`; so are text logs that start with a
    bracketed pid, whose surrounding blank lines mean nothing either) without the whitespace
    around it, other content byte for byte. The same capture sent again, compressed otherwise
    or with a trailing newline, has the same digest."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self._json: bool | None = None  # not known before the first byte that is not whitespace
        self._held = bytearray()  # whitespace not yet known to be inside the content

    def update(self, data: bytes) -> None:
        if self._json is None:
            start = data.lstrip(JSON_WHITESPACE)
            if not start:
                self._hold(data)
                return
            self._json = start[:1] in (b"{", b"[")
            if self._json:
                self._held.clear()  # leading whitespace of a document: not content
                data = start
            else:
                self._flush()
        if not self._json:
            self._sha.update(data)
            return
        body = data.rstrip(JSON_WHITESPACE)
        if body:
            self._flush()
            self._sha.update(body)
        self._hold(data[len(body) :])

    def _hold(self, blank: bytes) -> None:
        self._held += blank
        if len(self._held) > HELD_WHITESPACE:
            self._flush()

    def _flush(self) -> None:
        self._sha.update(self._held)
        self._held.clear()

    def hexdigest(self) -> str:
        if not self._json:  # content that is not JSON keeps its whitespace
            self._flush()
        return self._sha.hexdigest()


@dataclass
class Content:
    """What reading a stored body's content through once tells: its `ContentDigest`, its size
    decompressed, and its first `HEAD_BYTES` (the format's signature)."""

    sha256: str
    size: int
    head: bytes


HEAD_BYTES = 64 * 1024


def read_through(stream: BinaryIO, limit: int) -> Content | None:
    """The `Content` of a stored body (gunzipped when it is gzip, as `read_content` reads it),
    streaming, or None when its content cannot be read within `limit` (the task refuses it and
    says why)."""
    start = stream.read(2)
    stream.seek(0)
    pieces = gunzip_pieces(stream, limit) if start == GZIP_MAGIC else read_chunks(stream)
    digest = ContentDigest()
    size = 0
    head = bytearray()
    try:
        for piece in pieces:
            digest.update(piece)
            size += len(piece)
            if len(head) < HEAD_BYTES:
                head += piece[: HEAD_BYTES - len(head)]
    except UploadRefused:
        return None
    return Content(sha256=digest.hexdigest(), size=size, head=bytes(head))


def content_sha256(stream: BinaryIO, limit: int) -> str | None:
    """The `ContentDigest` of a stored body, or None (`read_through`)."""
    content = read_through(stream, limit)
    return None if content is None else content.sha256


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# zstd is fed this much at a time, so that one step's output stays bounded (a block of up to
# 128 KiB takes at least 4 bytes) and the cap is checked long before a bomb fills memory.
ZSTD_STEP = 1024
CORRUPT_ZSTD = "corrupt zstd stream"


def unzstd_limited(raw: bytes, limit: int, path: str = "") -> bytes:
    """The decompressed content of zstd data (all its frames, as `zstd -d` reads them),
    refusing past `limit` bytes out, data after the last frame, or a stream that ends inside a
    frame; errors name `path`. For zstd inside a format (heaptrack's `.zst` data files)."""
    out = io.BytesIO()
    produced = pos = frames = 0
    decompressor = zstandard.ZstdDecompressor()
    frame: zstandard.ZstdDecompressionObj | None = None
    try:
        while pos < len(raw):
            if frame is None:
                if raw[pos : pos + 4] != ZSTD_MAGIC:
                    where = f"data after its end at byte {pos}" if frames else "not zstd"
                    raise InvalidUpload(f"{CORRUPT_ZSTD}: {where}", path)
                frame = decompressor.decompressobj()
                frames += 1
            chunk = raw[pos : pos + ZSTD_STEP]
            data = frame.decompress(chunk)
            produced += len(data)
            if produced > limit:
                raise TooLarge(f"the decompressed content is larger than {limit} bytes", path)
            out.write(data)
            if frame.eof:
                pos += len(chunk) - len(frame.unused_data)
                frame = None
            else:
                pos += len(chunk)
    except zstandard.ZstdError as exc:
        raise InvalidUpload(f"{CORRUPT_ZSTD}: {exc}", path) from None
    if frame is not None:
        raise InvalidUpload(f"{CORRUPT_ZSTD}: it ends in the middle of a frame", path)
    if not frames:
        raise InvalidUpload(f"{CORRUPT_ZSTD}: it is empty", path)
    return out.getvalue()


def unzstd_prefix(raw: bytes, size: int) -> bytes:
    """The first `size` decompressed bytes of zstd data, for format sniffing (never raises)."""
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw[: 64 * 1024]))
        return reader.read(size)
    except zstandard.ZstdError:
        return b""
