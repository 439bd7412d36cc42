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

pprof reads two more heap headers the same way, unsampled and without allocation figures:
`heap profile: … @ growthz` (where the heap grew) and `@ fragmentationz`. And Java's heapz
(`--- heapz 1 ---`, pprof's legacy_java_profile.go), see `parse_java_heapz`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from memdash.core.logic.numbers import MAX_INT64

HEAP_HEADER_RE = re.compile(
    r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] *@ *(heap[_a-z0-9]*)/?(\d*)"
)
# Matched at the start of the line (re.match), as pprof's FindStringSubmatch finds it anywhere
# in a line that is all header.
GROWTH_HEADER_RE = re.compile(r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] @ growthz?")
FRAGMENTATION_HEADER_RE = re.compile(
    r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] @ fragmentationz?"
)
JAVA_HEAPZ_HEADER = "--- heapz 1 ---"
JAVA_HEAPZ_RATE = 524288  # legacy_java_profile.go: javaHeapzSamplingRate, 512K
JAVA_ATTRIBUTE_RE = re.compile(r"([\w ]+)=([\w ]+)")
JAVA_SAMPLE_RE = re.compile(r" *(\d+) +(\d+) +@ +([ x0-9a-f]*)")
JAVA_LOCATION_RE = re.compile(r"^\s*0x([0-9a-fA-F]+)\s+(.*)\s*$")
JAVA_FILE_LINE_RE = re.compile(r"^(.*)\s+\((.+):(-?[0-9]+)\)$")
JAVA_PATH_RE = re.compile(r"^(.*)\s+\((.*)\)$")
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
    return (
        HEAP_HEADER_RE.search(first_line) is not None
        or GROWTH_HEADER_RE.search(first_line) is not None
        or FRAGMENTATION_HEADER_RE.search(first_line) is not None
        or first_line.strip() == JAVA_HEAPZ_HEADER
    )


def parse_header(line: str) -> tuple[bool, int, bool]:
    """(sampled, period, has_alloc) as pprof's parseHeapHeader decides them."""
    header = HEAP_HEADER_RE.search(line)
    if header is None:
        if GROWTH_HEADER_RE.search(line) or FRAGMENTATION_HEADER_RE.search(line):
            return False, 1, False  # pprof: period 1, objects and space only
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
        raise LegacyError(
            f"negative {label} count or bytes ({count}: {size}): a heap profile counts what is "
            "allocated, and legacy text has no way to say it is a difference of two profiles "
            "(Go writes deltas only as profile.proto); send the heap profile itself",
            line_number,
        )
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
    if lines[0].strip() == JAVA_HEAPZ_HEADER:
        return parse_java_heapz(lines)
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


def parse_java_heapz(lines: list[str]) -> LegacyHeapProfile:
    """Java's heapz, as pprof's parseJavaProfile reads it: `--- heapz 1 ---`, attributes
    (`format = java`, `resolution = bytes`), then samples `<bytes> <count> @ 0x… 0x…` (bytes
    first: Java's fields are the other way round), then the locations `0x… function (file:line)`.
    Every sample is unsampled at Java's fixed rate of 512 KiB; the block size is bytes ÷ count
    before that. Addresses are ids here, not return addresses: nothing is subtracted."""
    profile = LegacyHeapProfile(period=JAVA_HEAPZ_RATE, sampled=True, has_alloc=False)
    at = 1
    while at < len(lines):  # the attributes
        line = lines[at].strip()
        if line:
            attribute = JAVA_ATTRIBUTE_RE.search(line)
            if attribute is None:
                break
            name, value = attribute[1].strip(), attribute[2].strip()
            if name == "format" and value != "java":
                raise LegacyError(f"a heapz profile of format {value!r}, not java", at + 1)
            if name == "resolution" and value != "bytes":
                raise LegacyError(f"a heapz profile in {value!r}, not bytes", at + 1)
            if name not in ("format", "resolution"):
                raise LegacyError(f"unknown heapz attribute {name!r}", at + 1)
        at += 1
    while at < len(lines):  # the samples
        line = lines[at].strip()
        if line:
            sample = JAVA_SAMPLE_RE.search(line)
            if sample is None:
                break
            profile.samples.append(java_sample(sample, at + 1))
        at += 1
    for line in lines[at:]:  # the locations
        location = JAVA_LOCATION_RE.match(line.strip())
        if location is not None:
            profile.symbols[int(location[1], 16)] = java_function(location[2].strip())
    return profile


def java_sample(sample: re.Match[str], line_number: int) -> LegacySample:
    size, count = int(sample[1]), int(sample[2])
    if count == 0:
        raise LegacyError("the second value (the count) must be non-zero", line_number)
    if count > MAX_INT64 or size > MAX_INT64:
        raise LegacyError("count or bytes do not fit in 64 bits", line_number)
    objects, space = scale_heap_sample(count, size, JAVA_HEAPZ_RATE)
    addresses = []
    for hex_text in HEX_NUMBER_RE.findall(sample[3]):
        address = int(hex_text, 16)
        if address >= 1 << 64:
            raise LegacyError(f"address {hex_text} does not fit in 64 bits", line_number)
        addresses.append(address)
    return LegacySample(
        inuse_objects=objects,
        inuse_space=space,
        alloc_objects=None,
        alloc_space=None,
        block_size=size // count,
        line_number=line_number,
        addresses=addresses,
    )


def java_function(text: str) -> tuple[str, str, int]:
    """(function, file, line) of a location's text, as parseJavaLocations names them."""
    file_line = JAVA_FILE_LINE_RE.match(text)
    if file_line is not None:
        number = int(file_line[3])
        return file_line[1], file_line[2], number if 0 < number <= 2**31 - 1 else 0
    path = JAVA_PATH_RE.match(text)
    if path is not None:  # a shared library: pprof keeps the file name alone
        return path[1], path[2].rstrip("/").rsplit("/", 1)[-1], 0
    if "generated stub/JIT" in text:
        return "STUB", "", 0
    return text, "", 0  # the agent's states, such as "GC" or "VM"
