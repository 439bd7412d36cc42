"""bzip2 and xz bodies, decompressed piece by piece within a limit, as `bunzip2` and `xz -d`
read them: one stream or several concatenated (their contents joined); between and after xz
streams, zero bytes (xz's stream padding) are skipped; anything else after the last stream is
refused rather than dropped unread, and so is a stream that ends early. Each step's output is
bounded (CHUNK bytes) and counted as it comes, so a bomb is refused at `limit`, never held.
Used by `core.logic.reading.BODY_CODECS`, beside its gunzip."""

from __future__ import annotations

import bz2
import lzma
from collections.abc import Callable, Iterator
from typing import BinaryIO, Protocol

from memdash.core.logic.errors import InvalidUpload, TooLarge

CHUNK = 1024 * 1024
BZIP2_MAGIC = tuple(b"BZh%d" % level for level in range(1, 10))  # "BZh" and the block size
XZ_MAGIC = b"\xfd7zXZ\x00"


class Decoder(Protocol):
    """What bz2.BZ2Decompressor and lzma.LZMADecompressor have in common."""

    @property
    def eof(self) -> bool: ...

    @property
    def needs_input(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes, max_length: int = -1) -> bytes: ...


def bunzip2_pieces(stream: BinaryIO, limit: int, path: str = "") -> Iterator[bytes]:
    """A bzip2 body's content (all its streams), at most `limit` bytes."""
    return decoded_pieces(stream, limit, path, "bzip2", BZIP2_MAGIC, bz2.BZ2Decompressor, False)


def unxz_pieces(stream: BinaryIO, limit: int, path: str = "") -> Iterator[bytes]:
    """An xz body's content (all its streams, stream padding skipped), at most `limit` bytes."""
    return decoded_pieces(stream, limit, path, "xz", (XZ_MAGIC,), _xz_decoder, True)


def _xz_decoder() -> Decoder:
    return lzma.LZMADecompressor(format=lzma.FORMAT_XZ)


def decoded_pieces(
    stream: BinaryIO,
    limit: int,
    path: str,
    name: str,
    magics: tuple[bytes, ...],
    new: Callable[[], Decoder],
    padding: bool,
) -> Iterator[bytes]:
    """The content of `stream`'s concatenated streams of codec `name` (each starting with one
    of `magics`, decoded by a `new()` decoder), piece by piece; `padding`: zero bytes may
    follow a stream."""
    corrupt = f"corrupt {name} stream"
    produced = read = streams = 0

    def more() -> bytes:
        nonlocal read
        chunk = stream.read(CHUNK)
        read += len(chunk)
        return chunk

    def counted(data: bytes) -> bytes:
        nonlocal produced
        produced += len(data)
        if produced > limit:
            raise TooLarge(f"the decompressed body is larger than {limit} bytes", path)
        return data

    decoder: Decoder | None = None
    pending = more()
    try:
        while True:
            if decoder is None:
                pending = pending or more()  # the last stream ended with the last read
                while streams and padding and pending and not pending.strip(b"\0"):
                    pending = more()  # zeros only so far: padding, or a stream after it
                pending = pending.lstrip(b"\0") if streams and padding else pending
                if 0 < len(pending) < max(map(len, magics)):
                    pending += more()  # a stream's magic split between two reads
                if not pending:
                    break
                if not pending.startswith(magics):
                    if streams:
                        at = read - len(pending)
                        raise InvalidUpload(f"{corrupt}: data after its end at byte {at}", path)
                    raise InvalidUpload(f"{corrupt}: it does not start as {name} does", path)
                decoder = new()
                streams += 1
            yield counted(decoder.decompress(pending, CHUNK))
            while not decoder.eof and not decoder.needs_input:
                yield counted(decoder.decompress(b"", CHUNK))
            if decoder.eof:
                pending, decoder = decoder.unused_data, None
            elif not (pending := more()):
                raise InvalidUpload(f"{corrupt}: it ends in the middle of a stream", path)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise InvalidUpload(f"{corrupt}: {exc}", path) from None
