"""Reading upload bodies within limits: streamed to disk while hashing, decompressed with a cap
checked while decompressing (a small gzip bomb never fills memory).

Every body's content goes through `capped_pieces`: whatever codec it is compressed with
(`BODY_CODECS`, by its magic bytes), or none, its content comes piece by piece and is counted
against a cap that its first `HEAD_BYTES` decide (the caller's `cap_for`: for an upload, the
memory budget divided by what parsing its format costs a byte), so the cap holds while reading,
before any parser, on receipt (the digest, `read_through`: nothing is kept) and in the worker
(`read_content`) alike.

bzip2 and xz bodies (`BZIP2_MAGIC`, `XZ_MAGIC`: massif-visualizer opens massif's files so
compressed) are read as bunzip2(1) and xz(1) read them, by `core.logic.streams`.

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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, cast

import zstandard
from isal import isal_zlib

from memdash.core.logic.errors import InvalidUpload, TooLarge, UploadRefused
from memdash.core.logic.streams import BZIP2_MAGIC, XZ_MAGIC, bunzip2_pieces, unxz_pieces

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


# The codecs an upload's body may be compressed with, by their magic bytes (any of a tuple):
# each gives the content piece by piece (at most CHUNK bytes each) and refuses past its `limit`
# bytes out. All are counted against the one budget the same way (`capped_pieces`).
BODY_CODECS: list[tuple[tuple[bytes, ...], Callable[[BinaryIO, int], Iterator[bytes]]]] = [
    ((GZIP_MAGIC,), gunzip_pieces),
    (BZIP2_MAGIC, bunzip2_pieces),
    ((XZ_MAGIC,), unxz_pieces),
]
MAGIC_BYTES = max(len(magic) for magics, _ in BODY_CODECS for magic in magics)


def body_pieces(stream: BinaryIO, limit: int) -> Iterator[bytes] | None:
    """The decompressed content of a compressed body piece by piece, or None when the body
    starts with no codec's magic bytes (its content is its bytes)."""
    head = stream.read(MAGIC_BYTES)
    stream.seek(0)
    for magics, pieces in BODY_CODECS:
        if head.startswith(magics):
            return pieces(stream, limit)
    return None


@dataclass(frozen=True)
class Cap:
    """How much content a body may have (`size` bytes), and the refusal past it."""

    size: int
    refusal: Callable[[], UploadRefused]


def uncapped(limit: int) -> Callable[[bytes], Cap]:
    """A cap of `limit` bytes whatever the content."""
    return lambda head: Cap(limit, lambda: TooLarge(f"the body is larger than {limit} bytes"))


def capped_pieces(
    stream: BinaryIO,
    limit: int,
    cap_for: Callable[[bytes], Cap] | None = None,
    over: list[UploadRefused] | None = None,
) -> Iterator[bytes]:
    """A stored body's content piece by piece (decompressed by its codec, or its bytes), at
    most `limit` bytes (its codec refuses past it) and at most what `cap_for` allows for content
    that starts with these first `HEAD_BYTES`: counted while reading, refused (the cap's
    refusal, also put in `over`) as soon as the content passes it, before more is read."""
    pieces = body_pieces(stream, limit) or read_chunks(stream)
    cap_for = cap_for or uncapped(limit)
    head = bytearray()
    held: list[bytes] = []  # the pieces read before the head was whole
    cap: Cap | None = None
    size = 0
    for piece in pieces:
        size += len(piece)
        if cap is None:
            head += piece[: HEAD_BYTES - len(head)]
            held.append(piece)
            if len(head) < HEAD_BYTES:
                continue
            cap = cap_for(bytes(head))
        if size > min(cap.size, limit):
            raise _refused(cap, over)
        yield from held or (piece,)
        held = []
    if cap is None:
        cap = cap_for(bytes(head))
        if size > min(cap.size, limit):
            raise _refused(cap, over)
        yield from held


def _refused(cap: Cap, over: list[UploadRefused] | None) -> UploadRefused:
    refusal = cap.refusal()
    if over is not None:
        over.append(refusal)
    return refusal


def read_content(
    stream: BinaryIO, limit: int, cap_for: Callable[[bytes], Cap] | None = None
) -> bytes:
    """The upload's content (`capped_pieces`), whole."""
    return b"".join(capped_pieces(stream, limit, cap_for))


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


def read_through(
    stream: BinaryIO,
    limit: int,
    cap_for: Callable[[bytes], Cap] | None = None,
    keep: list[bytes] | None = None,
) -> Content | None:
    """The `Content` of a stored body (as `read_content` reads it), streaming: nothing of it is
    kept but its digest, size and head, unless the caller processes it right away and gives
    `keep`, which gets its pieces (one decompression, not two). None when it cannot be read
    within `limit` (corrupt, or a codec's cap: the task refuses it and says why); the refusal
    of `cap_for` (raised) when the content passes what its head allows."""
    digest = ContentDigest()
    size = 0
    head = bytearray()
    over: list[UploadRefused] = []  # the cap's refusal, told apart from the codec's own
    try:
        for piece in capped_pieces(stream, limit, cap_for, over):
            digest.update(piece)
            size += len(piece)
            if keep is not None:
                keep.append(piece)
            if len(head) < HEAD_BYTES:
                head += piece[: HEAD_BYTES - len(head)]
    except UploadRefused as exc:
        if cap_for is not None and over and exc is over[-1]:
            raise
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
