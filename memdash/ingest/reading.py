"""Reading upload bodies within limits: streamed to disk while hashing, gunzipped with a cap
checked while decompressing (a small gzip bomb never fills memory).

`gunzip_limited` is memdash's one gunzip: for an upload's body (`read_content`) and for gzip
inside a format (pprof's .pb.gz). What may follow a gzip member is settled here, as gunzip(1)
reads it: another member (concatenated members are one stream; their contents are joined), or
zero bytes to the end (block padding, ignored). Anything else is refused rather than dropped
unread, and so is a stream that ends inside a member.
"""

from __future__ import annotations

import hashlib
import io
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from memdash.core.errors import InvalidUpload, TooLarge

if TYPE_CHECKING:
    from _typeshed import SupportsRead

CHUNK = 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"
GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip header and trailer around the deflate data
CORRUPT = "corrupt gzip stream"


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


def read_chunks(stream: SupportsRead[bytes], chunk_size: int = CHUNK) -> Iterator[bytes]:
    """A stream (a file, a request body) in chunks, for `copy_limited`."""
    while chunk := stream.read(chunk_size):
        yield chunk


def gunzip_limited(stream: BinaryIO, limit: int, path: str = "") -> bytes:
    """The decompressed content of a gzip stream (all its members), refusing past `limit` bytes
    out; errors name `path`. See the module's docstring for what may follow a member."""
    out = io.BytesIO()
    produced = read = members = 0
    member: zlib._Decompress | None = None  # the member being read; None between members
    padding = False  # zero bytes followed the last member: nothing else may come

    def emit(data: bytes) -> None:
        nonlocal produced
        produced += len(data)
        if produced > limit:
            raise TooLarge(f"the decompressed body is larger than {limit} bytes", path)
        out.write(data)

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
                    member = zlib.decompressobj(wbits=GZIP_WBITS)
                    members += 1
                emit(member.decompress(chunk, CHUNK))
                chunk = member.unconsumed_tail
                if member.eof:
                    chunk, member = member.unused_data, None
        if member is not None:
            # The input ended inside a member. Whatever zlib still holds comes out (counted), and
            # only a member that ends with it is whole.
            emit(member.flush())
            if not member.eof:
                raise InvalidUpload(f"{CORRUPT}: it ends in the middle of a member", path)
    except zlib.error as exc:
        raise InvalidUpload(f"{CORRUPT}: {exc}", path) from None
    if not members:
        raise InvalidUpload(f"{CORRUPT}: it is empty", path)
    return out.getvalue()


def gunzip_prefix(raw: bytes, size: int) -> bytes:
    """The first `size` decompressed bytes of gzip data, for format sniffing (never raises)."""
    try:
        return zlib.decompressobj(wbits=GZIP_WBITS).decompress(raw[: 64 * 1024], size)
    except zlib.error:
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
