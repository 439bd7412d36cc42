"""pprof heap profiles (Go's runtime/pprof and other pprof producers) as memdash snapshots.

Two encodings are accepted, as the Go runtime writes them (samples in tests/data/pprof/):
- profile.proto, gzip-compressed as pprof writes it (or already decompressed when the upload
  itself was gzip-encoded); decoded by `pprof_proto`;
- the legacy text heap profile (`heap profile: … @ heap/1048576`, `… @ heapprofile`, `growthz`,
  `fragmentationz`, Java's `--- heapz 1 ---`); parsed and unsampled by `pprof_legacy` exactly as
  pprof does, so totals match pprof's own figures.

A profile that says it is a difference (a Go delta, a `-diff_base`: `pprof_proto.delta_reason`)
is refused at the field that says so, whatever its values.

Mapping (both encodings):
- `inuse_objects`/`inuse_space` (`objects`/`space` in a profile without allocation figures)
  become # Persistent / Persistent Bytes;
- `alloc_objects - inuse_objects` / `alloc_space - inuse_space` become # Transient / Transient
  Bytes (never below 0: in a delta profile the allocations cover a window, the in-use figures the
  whole heap, so the difference can be negative; that part is not counted as transient);
- the sample's `bytes` label (the block size) gives the category `Malloc <size>`; a profile
  without it uses the average size in-use (else allocated) of the sample;
- the stack is the sample's locations, leaf first in pprof, reversed to memdash's outermost-first
  prefix tree; a location with inlined functions gives one frame per function;
- mappings become images (name = file name, uuid = build id, load address = start - file offset).
"""

from __future__ import annotations

import io
import posixpath
from datetime import UTC, datetime
from typing import Any

from memdash.core.errors import InvalidUpload
from memdash.core.numbers import MAX_INT64
from memdash.core.units import malloc_category
from memdash.ingest.parsers import pprof_legacy, pprof_proto
from memdash.ingest.parsers.monitor_common import SnapshotBuilder, build_section, document_header
from memdash.ingest.parsers.snapshot import converting_handler
from memdash.ingest.reading import GZIP_MAGIC, gunzip_limited, gunzip_prefix

FORMAT_NAME = "pprof"
DESCRIPTION = (
    "pprof heap profile: gzip-compressed profile.proto, legacy text `heap profile:` or Java "
    "`--- heapz 1 ---`"
)
UNKNOWN_IMAGE = "(unknown image)"
# A .pb.gz inside the upload: the body's own cap was applied to the gzip, this one to its content.
GUNZIP_LIMIT = 512 * 1024 * 1024
# Mappings of the OS rather than of the program: folded by "Hide System Libraries".
SYSTEM_PATH_PREFIXES = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/system/", "/apex/")


def detect(raw: bytes, doc: Any) -> bool:
    prefix = gunzip_prefix(raw, 256) if raw.startswith(GZIP_MAGIC) else raw[:256]
    if pprof_proto.looks_like_profile(prefix):
        return True
    return pprof_legacy.is_legacy_heap(prefix.decode("utf-8", errors="replace"))


def to_snapshot_document(raw: bytes, doc: Any, meta_fields: dict[str, Any]) -> dict[str, Any]:
    if raw.startswith(GZIP_MAGIC):
        data = gunzip_limited(io.BytesIO(raw), GUNZIP_LIMIT, "content")
    else:
        data = raw
    build = build_section(meta_fields, "pprof heap profile")
    if pprof_legacy.is_legacy_heap(data[:4096].decode("utf-8", errors="replace")):
        try:
            legacy = pprof_legacy.parse_legacy_heap(data.decode("utf-8", errors="replace"))
        except pprof_legacy.LegacyError as exc:
            raise InvalidUpload(exc.message, exc.path) from exc
        builder = legacy_content(legacy)
        captured_at = None
    elif pprof_proto.looks_like_profile(data[:256]):
        try:
            profile = pprof_proto.decode_profile(data)
            delta = pprof_proto.delta_reason(profile)
            if delta is not None:
                raise InvalidUpload(
                    f"pprof profile refused: {delta[0]}. memdash stores a heap as it was: send "
                    "the heap profile itself (/debug/pprof/heap without ?seconds=, or each of "
                    "the two profiles compared)",
                    delta[1],
                )
            builder = proto_content(profile)
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
            "profile starting with `heap profile:`",
            "content",
        )
    header = document_header(meta_fields, build=build, captured_at=captured_at, trigger="manual")
    return builder.document(header)


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


def image_entry(file: str, build_id: str, load_address: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": posixpath.basename(file.rstrip("/")) or file or UNKNOWN_IMAGE,
        "load_address": hex(max(0, load_address)),
    }
    if build_id:
        entry["uuid"] = build_id
    if file.startswith(SYSTEM_PATH_PREFIXES) or (file.startswith("[") and file.endswith("]")):
        entry["system"] = True
    return entry


def check_image_offset(address: int, load_address: int, path: str) -> None:
    """The offset of an address in its image is stored as a signed 64-bit integer."""
    if not 0 <= address - max(0, load_address) <= MAX_INT64:
        raise InvalidUpload(
            f"address {address:#x} is outside its image (loaded at {max(0, load_address):#x})", path
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


# ---------------------------------------------------------------- profile.proto


def sample_value_indices(profile: pprof_proto.Profile) -> tuple[int, int, int | None, int | None]:
    """Positions of (in-use objects, in-use bytes, allocated objects, allocated bytes) in each
    sample's values; refuses profiles that are not heap profiles."""
    names = [
        profile.string(t, f"sample_type[{i}].type")
        for i, (t, _u) in enumerate(profile.sample_types)
    ]
    position = {name: i for i, name in enumerate(names)}
    inuse_objects = position.get("inuse_objects", position.get("objects"))
    inuse_space = position.get("inuse_space", position.get("space"))
    if inuse_objects is None or inuse_space is None:
        found = ", ".join(names) or "none"
        raise InvalidUpload(
            f"not a heap profile: its sample types are {found}; expected inuse_objects and "
            "inuse_space (and optionally alloc_objects and alloc_space)",
            "sample_type",
        )
    return inuse_objects, inuse_space, position.get("alloc_objects"), position.get("alloc_space")


def proto_content(profile: pprof_proto.Profile) -> SnapshotBuilder:
    builder = SnapshotBuilder()
    inuse_objects_at, inuse_space_at, alloc_objects_at, alloc_space_at = sample_value_indices(
        profile
    )
    mappings = {m.id: (i, m) for i, m in enumerate(profile.mappings)}
    locations = {loc.id: (i, loc) for i, loc in enumerate(profile.locations)}
    functions = {f.id: (i, f) for i, f in enumerate(profile.functions)}
    bytes_key = profile.strings.index("bytes") if "bytes" in profile.strings else None
    frames_of_location: dict[int, list[int]] = {}

    def image_of(location: pprof_proto.Location, path: str) -> int:
        if location.mapping_id == 0:
            check_image_offset(location.address, 0, f"{path[: path.rindex('.')]}.address")
            return unknown_image(builder)
        if location.mapping_id not in mappings:
            raise pprof_proto.ProtoError(
                f"mapping {location.mapping_id} is not in the profile", path
            )
        index, mapping = mappings[location.mapping_id]
        file = profile.string(mapping.filename, f"mapping[{index}].filename")
        build_id = profile.string(mapping.build_id, f"mapping[{index}].build_id")
        load_address = mapping.memory_start - mapping.file_offset
        check_image_offset(location.address, load_address, f"{path[: path.rindex('.')]}.address")
        entry = image_entry(file, build_id, load_address)
        return builder.image(("mapping", mapping.id), entry)

    def location_frames(location_id: int, path: str) -> list[int]:
        """Frame indices of one location, innermost inlined function first (as pprof lists)."""
        if location_id in frames_of_location:
            return frames_of_location[location_id]
        if location_id not in locations:
            raise pprof_proto.ProtoError(f"location {location_id} is not in the profile", path)
        index, location = locations[location_id]
        image = image_of(location, f"location[{index}].mapping_id")
        frames = []
        for line_index, line in enumerate(location.lines):
            line_path = f"location[{index}].line[{line_index}].function_id"
            entry: dict[str, Any] = {"image": image, "address": location.address}
            if line.function_id:
                if line.function_id not in functions:
                    raise pprof_proto.ProtoError(
                        f"function {line.function_id} is not in the profile", line_path
                    )
                function_index, function = functions[line.function_id]
                name = profile.string(function.name, f"function[{function_index}].name")
                file = profile.string(function.filename, f"function[{function_index}].filename")
                if name:
                    entry["symbol"] = name
                if file:
                    entry["file"] = file
                if line.line > 0:
                    entry["line"] = line.line
            frames.append(builder.frame(entry))
        if not frames:
            frames.append(builder.frame({"image": image, "address": location.address}))
        frames_of_location[location_id] = frames
        return frames

    for sample_index, sample in enumerate(profile.samples):
        path = f"sample[{sample_index}]"
        if len(sample.values) != len(profile.sample_types):
            raise pprof_proto.ProtoError(
                f"{len(sample.values)} values for {len(profile.sample_types)} sample types",
                f"{path}.value",
            )
        if any(value < 0 for value in sample.values):
            raise pprof_proto.ProtoError(
                "negative value (a diff profile is not a heap snapshot)", f"{path}.value"
            )
        leaf_first = [
            frame
            for location_id in sample.location_ids
            for frame in location_frames(location_id, f"{path}.location_id")
        ]
        block_size = None
        for label in sample.labels:
            if bytes_key is not None and label.key == bytes_key and not label.str_index:
                block_size = label.num
                break
        alloc = None
        if alloc_objects_at is not None and alloc_space_at is not None:
            alloc = (sample.values[alloc_objects_at], sample.values[alloc_space_at])
        heap_row(
            builder,
            block_size=block_size if block_size is not None and block_size >= 0 else None,
            inuse=(sample.values[inuse_objects_at], sample.values[inuse_space_at]),
            alloc=alloc,
            stack=builder.stack(list(reversed(leaf_first))),
        )
    return builder


HANDLER = converting_handler(FORMAT_NAME, DESCRIPTION, detect, to_snapshot_document)
