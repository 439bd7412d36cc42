"""The legacy text heap profile (Go's `heap profile: … @ heap/1048576`, gperftools' `heapprofile`),
read the way pprof's own legacy_profile.go reads it, so that the numbers match what `pprof`
prints for the same file:

- the header decides the sampling: `heap/<2R>` and `heap_v2/<R>` (`heapz_v2`) are sampled with
  mean rate R and are unsampled with scaleHeapSample; `heapprofile` is unsampled (rate 1);
- each sample line is `inuse_count: inuse_bytes [alloc_count: alloc_bytes] @ addr addr …`
  (innermost address first); the allocation pair is kept only when the header's alloc totals
  differ from its in-use totals (pprof's `hasAlloc`);
- the block size (pprof's `bytes` label) is bytes/count taken before scaling, from the in-use
  pair when it has objects, else from the allocation pair;
- addresses are return addresses: pprof subtracts 1 to land on the call;
- a memory map may follow `--- Memory map: ---` or `MAPPED_LIBRARIES:` in /proc/self/maps form.

Go's debug=1 profiles also print the symbol of each address in `#\\t0x… name+0x… file:line`
comment lines; pprof ignores them, memdash uses them to name the frames.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from memdash.core.numbers import MAX_INT64

HEAP_HEADER_RE = re.compile(
    r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] *@ *(heap[_a-z0-9]*)/?(\d*)"
)
HEAP_SAMPLE_RE = re.compile(r"(-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*)")
HEX_NUMBER_RE = re.compile(r"0x[0-9a-f]+")
SYMBOL_COMMENT_RE = re.compile(r"^#\s+0x([0-9a-f]+)\s+(\S+?)(?:\+0x[0-9a-f]+)?\s+(\S+):(\d+)\s*$")
MEMORY_MAP_SENTINELS = ("--- Memory map: ---", "MAPPED_LIBRARIES:")

_HEX = r"(?:0x)?([0-9a-fA-F]+)"
_HEX_RANGE = r"\s*" + _HEX + r"[\s-]?\s*" + _HEX + r":?"
_PERM = r"(?:\s+([-rwxp]+))?"
_SPACE_HEX = r"(?:\s+([0-9a-fA-F]+))?"
_SPACE_STRING = r"(?:\s+(\S+))?"
PROC_MAPS_RE = re.compile(
    "^"
    + _HEX_RANGE
    + _PERM
    + _SPACE_HEX
    + r"\s+[0-9a-fA-F]+:[0-9a-fA-F]+"
    + r"\s+[0-9]+"
    + _SPACE_STRING
)
BRIEF_MAPS_RE = re.compile(
    "^" + _HEX_RANGE + _PERM + _SPACE_STRING + r"(?:\s+\(@([0-9a-fA-F]+)\))?" + _SPACE_HEX
)


class LegacyError(ValueError):
    def __init__(self, message: str, line_number: int):
        super().__init__(message)
        self.message = message
        self.path = f"line {line_number}"


@dataclass
class LegacyMapping:
    start: int
    limit: int
    offset: int
    file: str
    build_id: str = ""


@dataclass
class LegacySample:
    inuse_objects: int
    inuse_space: int
    alloc_objects: int | None  # None when the profile carries no allocation pair
    alloc_space: int | None
    block_size: int
    line_number: int
    addresses: list[int] = field(default_factory=list)  # call addresses (already -1), leaf first


@dataclass
class LegacyHeapProfile:
    period: int
    sampled: bool
    has_alloc: bool
    samples: list[LegacySample] = field(default_factory=list)
    mappings: list[LegacyMapping] = field(default_factory=list)
    symbols: dict[int, tuple[str, str, int]] = field(
        default_factory=dict
    )  # address -> (name, file, line)


def is_legacy_heap(text_prefix: str) -> bool:
    first_line = text_prefix.lstrip("\ufeff").split("\n", 1)[0]
    return HEAP_HEADER_RE.search(first_line) is not None


def parse_header(line: str) -> tuple[bool, int, bool]:
    """(sampled, period, has_alloc) as pprof's parseHeapHeader decides them."""
    header = HEAP_HEADER_RE.search(line)
    if header is None:
        raise LegacyError("expected a `heap profile: …` header", 1)
    inuse_count, inuse_bytes, alloc_count, alloc_bytes, kind, rate = header.groups()
    period = int(rate) if rate else 0
    if period > MAX_INT64:
        raise LegacyError("the sampling rate does not fit in 64 bits", 1)
    has_alloc = (alloc_count != inuse_count and alloc_count != "0") or (
        alloc_bytes != inuse_bytes and alloc_bytes != "0"
    )
    if kind in ("heapz_v2", "heap_v2"):
        return True, period, has_alloc
    if kind == "heapprofile":
        return False, 1, has_alloc
    if kind == "heap":
        # Go writes twice the sampling rate after `heap/` (the "2*MemProfileRate" convention).
        return True, period // 2, has_alloc
    raise LegacyError(f"unknown heap profile kind {kind!r}", 1)


def scale_heap_sample(count: int, size: int, rate: int) -> tuple[int, int]:
    """pprof's scaleHeapSample: divide by the probability 1 - exp(-avg/rate) that an allocation
    of the average size was sampled; Go converts to int64 by truncation, as int() does."""
    if count == 0 or size == 0:
        return 0, 0
    if rate <= 1:
        return count, size
    average_size = size / count
    scale = 1 / (1 - math.exp(-average_size / rate))
    return int(count * scale), int(size * scale)


def _pair(count_text: str, size_text: str, label: str, line_number: int) -> tuple[int, int]:
    count, size = int(count_text), int(size_text)
    if count < 0 or size < 0:
        raise LegacyError(f"negative {label} count or bytes", line_number)
    if count > MAX_INT64 or size > MAX_INT64:
        raise LegacyError(f"{label} count or bytes do not fit in 64 bits", line_number)
    if count == 0 and size != 0:
        raise LegacyError(f"{label} count was 0 but {label} bytes was {size}", line_number)
    return count, size


def parse_sample(line: str, line_number: int, header: tuple[bool, int, bool]) -> LegacySample:
    sampled, period, has_alloc = header
    match = HEAP_SAMPLE_RE.search(line)
    if match is None:
        raise LegacyError("expected a sample `count: bytes [count: bytes] @ 0x… 0x…`", line_number)
    inuse_count, inuse_size = _pair(match[1], match[2], "inuse", line_number)
    alloc_count, alloc_size = _pair(match[3], match[4], "allocation", line_number)

    # pprof takes the block size from the last non-empty pair it reads: alloc first, then in-use.
    block_size = 0
    if has_alloc and alloc_count:
        block_size = alloc_size // alloc_count
    if inuse_count:
        block_size = inuse_size // inuse_count

    def unsampled(count: int, size: int) -> tuple[int, int]:
        try:
            count, size = scale_heap_sample(count, size, period) if sampled else (count, size)
        except ZeroDivisionError:  # an average size so small against the rate that p = 0
            raise LegacyError("the sample cannot be unsampled at this rate", line_number) from None
        if count > MAX_INT64 or size > MAX_INT64:
            raise LegacyError("unsampled figures do not fit in 64 bits", line_number)
        return count, size

    inuse_count, inuse_size = unsampled(inuse_count, inuse_size)
    sample = LegacySample(
        inuse_objects=inuse_count,
        inuse_space=inuse_size,
        alloc_objects=None,
        alloc_space=None,
        block_size=block_size,
        line_number=line_number,
    )
    if has_alloc:
        sample.alloc_objects, sample.alloc_space = unsampled(alloc_count, alloc_size)
    for hex_text in HEX_NUMBER_RE.findall(match[5]):
        address = int(hex_text, 16)
        if address >= 1 << 64:
            raise LegacyError(f"address {hex_text} does not fit in 64 bits", line_number)
        # Return addresses point after the call; -1 lands on it (pprof does the same).
        sample.addresses.append(address - 1 if address else 0)
    return sample


def parse_mapping(line: str) -> LegacyMapping | None:
    """One /proc/self/maps-style line, or None for lines that are not executable mappings."""
    match = PROC_MAPS_RE.match(line)
    if match is not None:
        start, end, perm, offset, file = match.groups()
        build_id = ""
    else:
        match = BRIEF_MAPS_RE.match(line)
        if match is None:
            return None
        start, end, perm, file, offset, build_id = match.groups()
    if perm and "x" not in perm:
        return None
    return LegacyMapping(
        start=int(start, 16),
        limit=int(end, 16),
        offset=int(offset, 16) if offset else 0,
        file=file or "",
        build_id=build_id or "",
    )


def parse_legacy_heap(text: str) -> LegacyHeapProfile:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines:
        raise LegacyError("empty profile", 1)
    header = parse_header(lines[0])
    sampled, period, has_alloc = header
    profile = LegacyHeapProfile(period=period, sampled=sampled, has_alloc=has_alloc)
    line_number = 1
    in_memory_map = False
    for line_number, raw_line in enumerate(lines[1:], start=2):
        line = raw_line.strip()
        if in_memory_map:
            mapping = parse_mapping(line)
            if mapping is not None:
                profile.mappings.append(mapping)
            continue
        if not line:
            continue
        if line.startswith("#"):
            symbol = SYMBOL_COMMENT_RE.match(line)
            if symbol is not None:
                profile.symbols[int(symbol[1], 16)] = (symbol[2], symbol[3], int(symbol[4]))
            continue
        if any(sentinel in line for sentinel in MEMORY_MAP_SENTINELS):
            in_memory_map = True
            continue
        profile.samples.append(parse_sample(line, line_number, header))
    return profile


def mapping_for(profile: LegacyHeapProfile, address: int) -> int | None:
    """Index of the mapping that holds `address` (pprof's remapMappingIDs), or None."""
    for index, mapping in enumerate(profile.mappings):
        if mapping.start <= address < mapping.limit:
            return index
    return None


def symbol_for(profile: LegacyHeapProfile, address: int) -> tuple[str, str, int] | None:
    """Go prints the symbol of the call (return address - 1) in debug=1 comments; older
    runtimes printed the return address itself, so both are tried."""
    return profile.symbols.get(address) or profile.symbols.get(address + 1)
