"""FBAllocationTracker summaries (Facebook's FBAllocationTracker for iOS) as memdash snapshots.

The tracker counts Objective-C allocations and deallocations per class; an app serializes its
`FBAllocationTrackerSummary` objects to JSON with their property names:

    [{"className": "ChatCell", "allocations": 120, "deallocations": 80,
      "aliveObjects": 40, "instanceSize": 96}, …]

that is `currentAllocationSummary`, or one such list per generation, which is what
`currentSummaryForGenerations` returns.

Mapping:
- category = `className` (rows of the same class add up);
- # Persistent = `aliveObjects`, never below 0: the tracker computes allocations - deallocations,
  which goes negative when objects created before tracking started are freed during it;
- # Transient = `deallocations`;
- bytes = count × `instanceSize` (the tracker knows one size per class, `class_getInstanceSize`);
- generations: FBAllocationTracker's GenerationManager starts empty and tracks nothing until the
  first `markGeneration`; each mark opens the next generation. So list i holds the objects
  created after mark i+1 (and before the next mark) that are still alive: it becomes memdash's
  generation i, named "Generation <i+1>", and there is no "before the first mark" baseline.
  The per-generation summaries carry alive counts only (the tracker writes 0 allocations and 0
  deallocations in them). The tracker records no time for its marks, so `at_ms` is 0 for all;
- app and build are the ingest key's app and the upload's `build_version`/`build_number`;
  captured_at is the time the upload was received; trigger `manual`.
"""

from __future__ import annotations

from typing import Any

from memdash.allocations.logic.analysis import generation_name
from memdash.core.logic.errors import InvalidUpload
from memdash.ingest.logic.monitor_common import (
    SnapshotBuilder,
    build_section,
    document_header,
    require_int,
    require_str,
    type_name,
)
from memdash.ingest.writes.parsers.snapshot import converting_handler

FORMAT_NAME = "fballocationtracker"
DESCRIPTION = (
    "FBAllocationTracker summary: JSON list of {className, allocations, deallocations, "
    "aliveObjects, instanceSize}, or one such list per generation"
)


def is_summary(entry: Any) -> bool:
    return isinstance(entry, dict) and "className" in entry


def detect(raw: bytes, doc: Any) -> bool:
    if not isinstance(doc, list) or not doc:
        return False
    if isinstance(doc[0], list):
        for generation in doc:
            if not isinstance(generation, list):
                return False
            if generation:
                return is_summary(generation[0])
        return False
    return is_summary(doc[0])


def summary_row(builder: SnapshotBuilder, entry: Any, path: str, generation: int | None) -> None:
    if not isinstance(entry, dict):
        raise InvalidUpload(f"must be an object with className, found {type_name(entry)}", path)
    class_name = require_str(entry.get("className"), f"{path}.className").strip()
    instance_size = require_int(entry.get("instanceSize"), f"{path}.instanceSize")
    # allocations are checked but not stored: # Total = alive + deallocations = allocations.
    require_int(entry.get("allocations", 0), f"{path}.allocations")
    deallocations = require_int(entry.get("deallocations", 0), f"{path}.deallocations")
    alive = require_int(entry.get("aliveObjects"), f"{path}.aliveObjects", minimum=None)
    alive = max(0, alive)  # freed objects allocated before tracking make it negative
    builder.add_row(
        class_name,
        generation=generation,
        persistent=alive,
        persistent_bytes=alive * instance_size,
        transient=deallocations,
        transient_bytes=deallocations * instance_size,
    )


def to_snapshot_document(raw: bytes, doc: Any, meta_fields: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(doc, list) or not doc:
        raise InvalidUpload("an FBAllocationTracker summary must be a non-empty JSON list", "")
    builder = SnapshotBuilder()
    if isinstance(doc[0], list):
        for index, generation in enumerate(doc):
            if not isinstance(generation, list):
                raise InvalidUpload(
                    "must be a list of summaries (one list per generation), "
                    f"found {type_name(generation)}",
                    f"[{index}]",
                )
            builder.generation(generation_name(index), 0)
            for position, entry in enumerate(generation):
                summary_row(builder, entry, f"[{index}][{position}]", index)
    else:
        for position, entry in enumerate(doc):
            summary_row(builder, entry, f"[{position}]", None)
    header = document_header(
        meta_fields,
        build=build_section(meta_fields, "FBAllocationTracker summary"),
        captured_at=None,
        trigger="manual",
    )
    return builder.document(header)


HANDLER = converting_handler(FORMAT_NAME, DESCRIPTION, detect, to_snapshot_document)
