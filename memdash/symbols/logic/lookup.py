"""Answers from a symcache: function, file, line and inlined frames at an offset of an image.

No Django here. A symcache is made once per object at upload (`objects.read_objects`) and opened
here by path (memory-mapped by symbolic, kept open for the next lookups of this process).
Names are demangled with demumble (C++, Swift, Rust); a name that is not mangled (C,
Objective-C, Breakpad's already demangled names) is kept as it is.
"""

from __future__ import annotations

import uuid
from functools import lru_cache
from typing import NamedTuple

import pydemumble
import symbolic

OPEN_SYMCACHES = 64


class Located(NamedTuple):
    """One frame of what an address resolves to; an inlined call is its own frame. (A named
    tuple: tens of thousands are made per job, and it is the cheapest record to make.)"""

    function: str
    file: str
    line: int | None
    inlined: bool
    image: str


@lru_cache(maxsize=100_000)
def demangle(name: str) -> str:
    """The readable name: `_ZN4chat10ImageCache6decodeEPKhm` → `chat::ImageCache::decode(…)`,
    `$s4Chat0A14ViewControllerC11viewDidLoadyyF` → `Chat.ChatViewController.viewDidLoad() -> ()`."""
    if not name:
        return name
    return pydemumble.demangle(name) or name


@lru_cache(maxsize=OPEN_SYMCACHES)
def open_symcache(path: str) -> symbolic.SymCache:
    return symbolic.SymCache.open(path)


def locate(cache: symbolic.SymCache, offset: int, image: str) -> list[Located]:
    """The frames at `offset` (relative to the image's load address), outermost first: the
    function that was called, then each call inlined into it. Empty when the symcache has
    nothing there."""
    found = cache.lookup(offset)
    frames = []
    last = len(found) - 1
    # symbolic lists the innermost (inlined) location first and the real function last.
    for position, location in enumerate(reversed(found)):
        frames.append(
            Located(
                function=demangle(location.symbol or ""),
                file=location.full_path or "",
                line=location.line or None,
                inlined=position > 0 and last > 0,
                image=image,
            )
        )
    return [f for f in frames if f.function]


def normalize_debug_id(text: str) -> str:
    """symbolic's normal form of a debug id (lowercase UUID, `-age` when not 0), "" when the
    text is none. Breakpad ids (33 hex) and ELF build ids (40 hex: the first 16 bytes, as
    Breakpad and symbolic read them) come out the same as from the object itself."""
    text = text.strip()
    if not text:
        return ""
    compact = text.replace("-", "")
    if len(compact) > 33 and all(c in "0123456789abcdefABCDEF" for c in compact):
        # An ELF build id: the GUID is its first 16 bytes, the first three fields little-endian.
        raw = bytes.fromhex(compact[:32])
        return str(uuid.UUID(bytes_le=raw))
    try:
        normalized: str = symbolic.normalize_debug_id(text)
        return normalized
    except symbolic.SymbolicError:
        return ""
    except ValueError:
        return ""
