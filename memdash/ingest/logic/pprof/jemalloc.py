"""jemalloc's own heap profile (`prof.dump`, `prof_final`, `prof_gdump`: the `jeprof.<pid>.<seq>.
<kind>.heap` files), read the way jemalloc's reader of them, `jeprof` (pprof's Perl ancestor as
jemalloc ships it), reads it in `ReadThreadedHeapProfile`:

    heap_v2/524288                        the mean bytes between samples, 2^lg_prof_sample
      t*: 28106: 56637512 [0: 0]          the totals of every thread (not used: see below)
      t0: 28106: 56637512 [0: 0] name     each thread's (jemalloc's thread index, maybe a name)
    @ 0x7f4bc7446b86 0x7f4bc7447acc …     a stack, innermost first
      t*: 13: 6688 [0: 0]                 its in-use objects: bytes [accumulated objects: bytes]
      t0: 13: 6688 [0: 0]
    MAPPED_LIBRARIES:                     then the process's /proc/self/maps

The pairs are the sampled figures (jemalloc 5.3, which keeps unbiased sums, converts them back
to sampled ones when it dumps); each is unsampled as jeprof's AdjustSamples does for `heap_v2`
(sampling algorithm 2), which is pprof's scaleHeapSample: × 1 / (1 − e^(−avg/R)), avg = bytes ÷
count, R the header's number; the figures are truncated to whole objects and bytes per stack, as
pprof does (jeprof sums the unrounded figures and truncates the sum, so its Total can be one more).
The accumulated pair (`prof_accum:true`; `[0: 0]` otherwise) is the allocation figures. Addresses
are return addresses: jeprof keeps the first and subtracts 1 from the callers (FixCallerAddresses).
The header's and the threads' lines are summaries jeprof skips; so does memdash.
"""

from __future__ import annotations

import re

from memdash.core.logic.numbers import MAX_INT64
from memdash.ingest.logic.pprof.legacy import (
    MEMORY_MAP_SENTINELS,
    LegacyError,
    LegacyHeapProfile,
    LegacySample,
    parse_mapping,
    scale_heap_sample,
)

HEADER_RE = re.compile(r"^heap_v2/(\d+)\s*$")
STACK_RE = re.compile(r"^@((?:\s+(?:0x)?[0-9a-fA-F]+)*)\s*$")
# `t*:` or `t<thread index>:` then `count: bytes [count: bytes]`; a thread's line may end with
# the thread's name (mallctl thread.prof.name).
COUNTS_RE = re.compile(r"^t(\*|\d+):\s*(-?\d+):\s*(-?\d+)\s*\[\s*(-?\d+):\s*(-?\d+)\s*\](.*)$")
FORM = "jemalloc heap profile (`heap_v2/…`)"


def is_jemalloc_heap(text_prefix: str) -> bool:
    return HEADER_RE.match(text_prefix.lstrip("\ufeff").split("\n", 1)[0].strip()) is not None


def _pair(count: str, size: str, label: str, line_number: int) -> tuple[int, int]:
    objects, space = int(count), int(size)
    if objects < 0 or space < 0:
        raise LegacyError(
            f"negative {label} count or bytes ({objects}: {space}): jemalloc writes none; a "
            "difference of two profiles is not a heap profile",
            line_number,
        )
    if objects > MAX_INT64 or space > MAX_INT64:
        raise LegacyError(f"{label} count or bytes do not fit in 64 bits", line_number)
    if objects == 0 and space != 0:
        raise LegacyError(f"{label} count was 0 but {label} bytes was {space}", line_number)
    return objects, space


def parse_jemalloc_heap(text: str) -> LegacyHeapProfile:
    lines = text.lstrip("\ufeff").splitlines()
    header = HEADER_RE.match(lines[0].strip()) if lines else None
    if header is None:
        raise LegacyError("expected the header `heap_v2/<bytes between samples>`", 1)
    period = int(header[1])
    if period > MAX_INT64:
        raise LegacyError("the sampling rate does not fit in 64 bits", 1)
    profile = LegacyHeapProfile(period=period, sampled=period > 1, has_alloc=False)
    stack: list[int] | None = None  # the addresses of the stack whose `t*:` line is next
    stack_line = 0
    seen_totals = False
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
        if any(line.startswith(sentinel) for sentinel in MEMORY_MAP_SENTINELS):
            in_memory_map = True
            continue
        if line.startswith("@"):
            if stack is not None:
                raise LegacyError("a stack without its `t*:` line", stack_line)
            stack, stack_line = stack_addresses(line, line_number), line_number
            continue
        counts = COUNTS_RE.match(line)
        if counts is None:
            raise LegacyError(
                "expected a stack `@ 0x… 0x…` or its counts `t*: objects: bytes [objects: bytes]`",
                line_number,
            )
        inuse = _pair(counts[2], counts[3], "in-use", line_number)
        accumulated = _pair(counts[4], counts[5], "accumulated", line_number)
        if counts[1] != "*":
            continue  # a thread's share, already in its stack's `t*:` line
        if stack is None:
            if seen_totals or profile.samples:
                raise LegacyError("counts `t*:` without a stack `@ …` before them", line_number)
            seen_totals = True
            # jemalloc writes the accumulated pairs only with prof_accum; else they are 0.
            profile.has_alloc = accumulated != (0, 0)
            continue
        profile.samples.append(sample_of(profile, inuse, accumulated, stack, line_number))
        stack = None
    if stack is not None:
        raise LegacyError("the profile ends before the `t*:` line of this stack", stack_line)
    return profile


def stack_addresses(line: str, line_number: int) -> list[int]:
    match = STACK_RE.match(line)
    if match is None:
        raise LegacyError("expected a stack `@ 0x… 0x…` of hexadecimal addresses", line_number)
    addresses = []
    for index, token in enumerate(match[1].split()):
        address = int(token, 16)  # with or without its 0x
        if address >= 1 << 64:
            raise LegacyError(f"address {token} does not fit in 64 bits", line_number)
        # jeprof's FixCallerAddresses: the callers' return addresses less 1, on the call.
        addresses.append(address - 1 if index and address else address)
    return addresses


def sample_of(
    profile: LegacyHeapProfile,
    inuse: tuple[int, int],
    accumulated: tuple[int, int],
    addresses: list[int],
    line_number: int,
) -> LegacySample:
    block_size = inuse[1] // inuse[0] if inuse[0] else 0
    if not inuse[0] and profile.has_alloc and accumulated[0]:
        block_size = accumulated[1] // accumulated[0]

    def unsampled(pair: tuple[int, int]) -> tuple[int, int]:
        try:
            count, size = scale_heap_sample(*pair, profile.period)
        except ZeroDivisionError:
            raise LegacyError("the sample cannot be unsampled at this rate", line_number) from None
        if count > MAX_INT64 or size > MAX_INT64:
            raise LegacyError("unsampled figures do not fit in 64 bits", line_number)
        return count, size

    objects, space = unsampled(inuse)
    sample = LegacySample(objects, space, None, None, block_size, line_number, addresses)
    if profile.has_alloc:
        sample.alloc_objects, sample.alloc_space = unsampled(accumulated)
    return sample
