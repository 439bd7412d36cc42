"""Reading upload bodies within limits: streamed to disk while hashing, gunzipped with a cap
checked while decompressing (a small gzip bomb never fills memory)."""

from __future__ import annotations

import hashlib
import io
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

from memdash.core.errors import InvalidUpload, TooLarge

CHUNK = 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"


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


def read_chunks(stream: BinaryIO, chunk_size: int = CHUNK) -> Iterable[bytes]:
    while chunk := stream.read(chunk_size):
        yield chunk


def gunzip_limited(stream: BinaryIO, limit: int) -> bytes:
    """Decompress a gzip stream (several members allowed), refusing past `limit` bytes out."""
    out = io.BytesIO()
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    member_open = False  # a member has been fed bytes and has not reached its end yet
    produced = 0
    try:
        while chunk := stream.read(CHUNK):
            while chunk:
                member_open = True
                data = decompressor.decompress(chunk, CHUNK)
                produced += len(data)
                if produced > limit:
                    raise TooLarge(f"the decompressed body is larger than {limit} bytes")
                out.write(data)
                chunk = decompressor.unconsumed_tail
                if decompressor.eof:
                    chunk = decompressor.unused_data
                    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
                    member_open = False
        if member_open:
            # Output held back by the max_length cap comes out here (at most one window).
            tail = decompressor.flush()
            produced += len(tail)
            if produced > limit:
                raise TooLarge(f"the decompressed body is larger than {limit} bytes")
            out.write(tail)
            member_open = not decompressor.eof
    except zlib.error as exc:
        raise InvalidUpload(f"corrupt gzip stream: {exc}") from None
    if member_open:
        raise InvalidUpload("corrupt gzip stream: it ends in the middle of a member")
    return out.getvalue()


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
