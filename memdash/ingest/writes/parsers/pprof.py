"""pprof heap profiles (Go's runtime/pprof and other pprof producers) as memdash snapshots.

Two encodings are accepted, as the Go runtime writes them (samples in tests/data/pprof/):
- profile.proto, gzip-compressed as pprof writes it (or already decompressed when the upload
  itself was gzip-encoded); decoded in bulk by `pprof_columns` (protobuf's compiled parser and
  numpy) and converted by `pprof_convert` straight to the snapshot that is stored;
- the legacy text heap profile (`heap profile: … @ heap/1048576`, `… @ heapprofile`, `growthz`,
  `fragmentationz`, Java's `--- heapz 1 ---`); parsed and unsampled by `pprof_legacy` exactly as
  pprof does, so totals match pprof's own figures;
- jemalloc's own heap profile (`heap_v2/<rate>`, `jeprof.<pid>.….heap`), read by `pprof_jemalloc`
  as jemalloc's `jeprof` reads it, with the same unsampling.
Refusals of the text forms name the form and the line where reading stopped.

A profile that says it is a difference (a Go delta: the runtime's four heap sample types over a
`duration_nanos`; a `-diff_base`: `pprof_convert.delta_reason`) is refused at the field that says
so, whatever its values. profile.proto fields are read in any order (the Go runtime writes
`period_type` and `period` before `sample_type`, pprof in field-number order).

Mapping (both encodings):
- `inuse_objects`/`inuse_space` (`objects`/`space` in a profile without allocation figures)
  become # Persistent / Persistent Bytes;
- `alloc_objects - inuse_objects` / `alloc_space - inuse_space` become # Transient / Transient
  Bytes (never below 0: in a delta profile the allocations cover a window, the in-use figures the
  whole heap, so the difference can be negative; that part is not counted as transient);
- a figure the profile does not hold is 0: a profile store's export of one series over its
  window (one sample type, `inuse_space`, with a `duration_nanos`) gives only Persistent Bytes;
- the sample's `bytes` label (the block size) gives the category `Malloc <size>`; a profile
  without it uses the average size in-use (else allocated) of the sample;
- the stack is the sample's locations, leaf first in pprof, reversed to memdash's outermost-first
  prefix tree; a location with inlined functions gives one frame per function;
- mappings become images (name = file name, uuid = build id, load address = start - file offset).
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

from memdash.allocations.logic.document.parse import parse_header
from memdash.allocations.writes.snapshots import (
    snapshot_result,
    store_parsed_snapshot,
    store_snapshot_document,
)
from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.reading import GZIP_MAGIC, gunzip_limited, gunzip_prefix
from memdash.core.logic.units import malloc_category
from memdash.core.writes.uploads import FormatHandler, Progress, StoreResult, UploadMeta, check_app
from memdash.ingest.logic.monitor_common import (
    SnapshotBuilder,
    build_section,
    document_header,
    meta_fields_from_upload,
)
from memdash.ingest.logic.pprof import (
    columns as pprof_columns,
)
from memdash.ingest.logic.pprof import (
    convert as pprof_convert,
)
from memdash.ingest.logic.pprof import (
    jemalloc as pprof_jemalloc,
)
from memdash.ingest.logic.pprof import (
    legacy as pprof_legacy,
)
from memdash.ingest.logic.pprof import (
    proto as pprof_proto,
)
from memdash.ingest.logic.pprof.content import (
    SYSTEM_PATH_PREFIXES as SYSTEM_PATH_PREFIXES,  # what heaptrack and massif fold too
)
from memdash.ingest.logic.pprof.content import (
    UNKNOWN_IMAGE,
    HeapContent,
    check_image_offset,
    image_entry,
)
from memdash.ingest.writes.parse_memory import decompress_within_budget

FORMAT_NAME = "pprof"
DESCRIPTION = (
    "pprof heap profile: gzip-compressed profile.proto, legacy text `heap profile:`, Java "
    "`--- heapz 1 ---` or jemalloc `heap_v2/…`"
)
# A .pb.gz inside the upload: the body's own cap was applied to the gzip, this one to its content.
GUNZIP_LIMIT = 512 * 1024 * 1024
Content = SnapshotBuilder | HeapContent  # a text profile's, a profile.proto's


def detect(raw: bytes, doc: Any) -> bool:
    prefix = gunzip_prefix(raw, 256) if raw.startswith(GZIP_MAGIC) else raw[:256]
    if pprof_proto.looks_like_profile(prefix):
        return True
    text = prefix.decode("utf-8", errors="replace")
    return pprof_legacy.is_legacy_heap(text) or pprof_jemalloc.is_jemalloc_heap(text)


def legacy_form(text_prefix: str) -> str:
    """The text form a refusal names, by its first line."""
    if pprof_jemalloc.is_jemalloc_heap(text_prefix):
        return pprof_jemalloc.FORM
    if text_prefix.lstrip("\ufeff").startswith(pprof_legacy.JAVA_HEAPZ_HEADER):
        return "Java heapz profile (`--- heapz 1 ---`)"
    return "pprof legacy heap profile (`heap profile: …`)"


def read_legacy(data: bytes) -> pprof_legacy.LegacyHeapProfile:
    text = data.decode("utf-8", errors="replace")
    try:
        if pprof_jemalloc.is_jemalloc_heap(text[:4096]):
            return pprof_jemalloc.parse_jemalloc_heap(text)
        return pprof_legacy.parse_legacy_heap(text)
    except pprof_legacy.LegacyError as exc:
        raise InvalidUpload(
            f"{legacy_form(text[:4096])}, reading stopped at {exc.path}: {exc.message}", exc.path
        ) from exc


def convert(raw: bytes, meta_fields: dict[str, Any]) -> tuple[dict[str, Any], Content]:
    """The document header and the content of a pprof upload."""
    if raw.startswith(GZIP_MAGIC):
        data = decompress_within_budget(  # the lesser of its cap and what a worker may parse
            FORMAT_NAME, GUNZIP_LIMIT, lambda cap: gunzip_limited(io.BytesIO(raw), cap, "content")
        )
    else:
        data = raw
    build = build_section(meta_fields, "pprof heap profile")
    text_prefix = data[:4096].decode("utf-8", errors="replace")
    content: Content
    if pprof_legacy.is_legacy_heap(text_prefix) or pprof_jemalloc.is_jemalloc_heap(text_prefix):
        content = legacy_content(read_legacy(data))
        captured_at = None
    elif pprof_proto.looks_like_profile(data[:256]):
        try:
            profile = pprof_columns.decode(data)
            del data  # read: not kept while the content is made and stored
            delta = pprof_convert.delta_reason(profile)
            if delta is not None:
                raise InvalidUpload(
                    f"pprof profile refused: {delta[0]}. memdash stores a heap as it was: send "
                    "the heap profile itself (/debug/pprof/heap without ?seconds=, or each of "
                    "the two profiles compared)",
                    delta[1],
                )
            content = pprof_convert.heap_content(profile)
        except pprof_proto.ProtoError as exc:
            raise InvalidUpload(exc.message, exc.path) from exc
        captured_at = (
            datetime.fromtimestamp(profile.time_nanos / 1e9, UTC)
            if profile.time_nanos > 0
            else None
        )
    else:
        raise InvalidUpload(
            "not a pprof heap profile: expected gzip-compressed profile.proto or a legacy text "
            "profile starting with `heap profile:`, `--- heapz 1 ---` or `heap_v2/`",
            "content",
        )
    header = document_header(meta_fields, build=build, captured_at=captured_at, trigger="manual")
    return header, content


def to_snapshot_document(raw: bytes, doc: Any, meta_fields: dict[str, Any]) -> dict[str, Any]:
    header, content = convert(raw, meta_fields)
    return content.document(header)


def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    """A text profile's document goes through the snapshot pipeline; a profile.proto's content
    goes straight into the snapshot it stores (checked where the profile holds each value):
    its hundreds of thousands of samples are never a document's rows."""
    progress("convert", 0.0)
    header, content = convert(raw, meta_fields_from_upload(meta))
    if isinstance(content, SnapshotBuilder):
        return store_snapshot_document(
            content.document(header), meta, progress, source_format=FORMAT_NAME
        )
    check_app(header["app"], meta)
    progress("validate", 1.0)
    parsed = content.fill(parse_header(header))
    del content  # its frames as dicts, now in `parsed`: not kept while the snapshot is stored
    return snapshot_result(store_parsed_snapshot(parsed, meta, progress, FORMAT_NAME))


def heap_row(
    builder: SnapshotBuilder,
    *,
    block_size: int | None,
    inuse: tuple[int, int],
    alloc: tuple[int, int] | None,
    stack: int | None,
) -> None:
    """One heap sample as an allocation row (see the module docstring for the mapping)."""
    inuse_objects, inuse_space = inuse
    if block_size is None:
        objects, space = inuse if inuse_objects else (alloc or (0, 0))
        block_size = space // objects if objects else 0
    transient, transient_bytes = 0, 0
    if alloc is not None:
        transient = max(0, alloc[0] - inuse_objects)
        transient_bytes = max(0, alloc[1] - inuse_space)
    builder.add_row(
        malloc_category(block_size),
        stack=stack,
        persistent=inuse_objects,
        persistent_bytes=inuse_space,
        transient=transient,
        transient_bytes=transient_bytes,
    )


def unknown_image(builder: SnapshotBuilder) -> int:
    """Addresses outside every mapping (Go's legacy profiles have no mappings at all) belong to
    one image of unknown name loaded at 0, so that they show as `(unknown image) + 0x…`."""
    return builder.image(("unknown",), {"name": UNKNOWN_IMAGE, "load_address": "0x0"})


# ---------------------------------------------------------------- legacy text


def legacy_content(profile: pprof_legacy.LegacyHeapProfile) -> SnapshotBuilder:
    builder = SnapshotBuilder()
    frame_of: dict[int, int] = {}

    def frame_index(address: int, path: str) -> int:
        if address not in frame_of:
            mapping_index = pprof_legacy.mapping_for(profile, address)
            if mapping_index is None:
                image = unknown_image(builder)
                check_image_offset(address, 0, path)
            else:
                mapping = profile.mappings[mapping_index]
                load_address = mapping.start - mapping.offset
                image = builder.image(
                    ("mapping", mapping_index),
                    image_entry(mapping.file, mapping.build_id, load_address),
                )
                check_image_offset(address, load_address, path)
            entry: dict[str, Any] = {"image": image, "address": address}
            symbol = pprof_legacy.symbol_for(profile, address)
            if symbol is not None:
                entry.update(symbol=symbol[0], file=symbol[1], line=symbol[2])
            frame_of[address] = builder.frame(entry)
        return frame_of[address]

    for sample in profile.samples:
        path = f"line {sample.line_number}"
        frames_outermost_first = [frame_index(a, path) for a in reversed(sample.addresses)]
        alloc = None
        if sample.alloc_objects is not None and sample.alloc_space is not None:
            alloc = (sample.alloc_objects, sample.alloc_space)
        heap_row(
            builder,
            block_size=sample.block_size,
            inuse=(sample.inuse_objects, sample.inuse_space),
            alloc=alloc,
            stack=builder.stack(frames_outermost_first),
        )
    return builder


HANDLER = FormatHandler(name=FORMAT_NAME, description=DESCRIPTION, detect=detect, process=process)
