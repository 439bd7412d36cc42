"""What the importers of the monitors' own formats (Matrix, FBAllocationTracker, pprof) share.

Each importer converts its format into a memdash.snapshot v1 document (a plain dict) that the
snapshot pipeline then validates and stores exactly like a native upload. This module holds the
pure parts they have in common: the upload's own fields as a plain dict (`meta_fields`), the
document header built from them, and a builder that deduplicates images, frames and stack-tree
nodes and adds up rows. (Gzip inside a format is read by `memdash.core.logic.reading`.)

No Django here: everything is plain data in and out.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.numbers import MAX_INT64

# The keys of `meta_fields`, the upload's own fields as plain data (see meta_fields_from_upload).
META_KEYS = (
    "app_id",
    "platform",
    "app_name",
    "build_version",
    "build_number",
    "build_commit",
    "device_id",
    "device_model",
    "os",
    "session",
    "received_at",
)

# The widths of the columns these values end up in (core.Build, snapshots.Snapshot).
MAX_BUILD_FIELD = 64
MAX_DEVICE_FIELD = 128
MAX_SESSION = 128


def meta_fields_from_upload(meta: Any) -> dict[str, Any]:
    """The plain-data view of an `core.writes.uploads.UploadMeta` that the pure converters take.

    Duck-typed so that this module does not import Django models."""
    app = meta.app
    return {
        "app_id": app.bundle_id,
        "platform": app.platform,
        "app_name": getattr(app, "name", "") or "",
        "build_version": meta.build_version or "",
        "build_number": meta.build_number or "",
        "build_commit": meta.build_commit or "",
        "device_id": meta.device_id or "",
        "device_model": meta.device_model or "",
        "os": meta.os or "",
        "session": meta.session or "",
        "received_at": meta.received_at,
    }


def rfc3339(moment: datetime | str | None) -> str:
    """An RFC 3339 timestamp with offset (naive datetimes are taken as UTC)."""
    if isinstance(moment, str) and moment:
        return moment
    if not isinstance(moment, datetime):
        moment = datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.isoformat()


def build_section(
    meta_fields: dict[str, Any], format_name: str, fallback: dict[str, str] | None = None
) -> dict[str, Any]:
    """The document's `build`: the upload's fields win, then what the content itself carries
    (`fallback`); a build version is required because a build is (app, version, number)."""
    fallback = fallback or {}

    def pick(key: str) -> str:
        value = meta_fields.get(key) or fallback.get(key) or ""
        return str(value)

    version = pick("build_version")
    if not version:
        raise InvalidUpload(
            f"a {format_name} names no build: send `build_version` (and `build_number`) "
            "as upload fields or query parameters",
            "build_version",
        )
    build = {}
    for key, doc_key in (
        ("build_version", "version"),
        ("build_number", "number"),
        ("build_commit", "commit"),
    ):
        value = pick(key)
        if len(value) > MAX_BUILD_FIELD:
            raise InvalidUpload(f"is longer than {MAX_BUILD_FIELD} characters", key)
        if value:
            build[doc_key] = value
    return build


def document_header(
    meta_fields: dict[str, Any],
    *,
    build: dict[str, Any],
    captured_at: datetime | str | None,
    trigger: str,
    device: dict[str, Any] | None = None,
    session: str = "",
) -> dict[str, Any]:
    """The top level of a snapshot document for the key's app; the caller adds the content."""
    app = {"id": meta_fields.get("app_id", ""), "platform": meta_fields.get("platform", "")}
    if meta_fields.get("app_name"):
        app["name"] = meta_fields["app_name"]
    doc: dict[str, Any] = {
        "format": "memdash.snapshot",
        "version": 1,
        "app": app,
        "build": build,
        "captured_at": rfc3339(
            captured_at if captured_at is not None else meta_fields.get("received_at")
        ),
        "trigger": trigger,
    }
    device = device if device is not None else device_section(meta_fields)
    for key, value in device.items():
        limit = 255 if key == "id" else MAX_DEVICE_FIELD
        if len(value) > limit:
            raise InvalidUpload(f"is longer than {limit} characters", f"device.{key}")
    if device:
        doc["device"] = device
    session = str(session or meta_fields.get("session") or "")
    if len(session) > MAX_SESSION:
        raise InvalidUpload(f"is longer than {MAX_SESSION} characters", "session")
    if session:
        doc["session"] = session
    return doc


def device_section(
    meta_fields: dict[str, Any], content: dict[str, str] | None = None
) -> dict[str, Any]:
    """`device` from the upload's fields, each missing one taken from the content if it has it."""
    content = content or {}
    device = {}
    for key, doc_key in (("device_id", "id"), ("device_model", "model"), ("os", "os")):
        value = meta_fields.get(key) or content.get(key) or ""
        if value:
            device[doc_key] = str(value)
    return device


class SnapshotBuilder:
    """Collects the content of a snapshot document: images, frames and the stack prefix tree
    (each deduplicated), generations, and allocation rows added up by (category, stack,
    generation) the way the snapshot format itself says rows add up."""

    def __init__(self) -> None:
        self.images: list[dict[str, Any]] = []
        self.frames: list[dict[str, Any] | str] = []
        self.stacks: list[list[int | None]] = []
        self.generations: list[dict[str, Any]] = []
        self._image_index: dict[Any, int] = {}
        self._frame_index: dict[Any, int] = {}
        self._node_index: dict[tuple[int | None, int], int] = {}
        self._rows: dict[tuple[str, int | None, int | None], list[int]] = {}

    def image(self, key: Any, entry: dict[str, Any]) -> int:
        if key not in self._image_index:
            self._image_index[key] = len(self.images)
            self.images.append(entry)
        return self._image_index[key]

    def frame(self, entry: dict[str, Any] | str) -> int:
        key = entry if isinstance(entry, str) else tuple(sorted(entry.items()))
        if key not in self._frame_index:
            self._frame_index[key] = len(self.frames)
            self.frames.append(entry)
        return self._frame_index[key]

    def stack(
        self, frame_indices_outermost_first: list[int], parent: int | None = None
    ) -> int | None:
        """The node of the innermost frame of this stack (None for an empty stack), below
        `parent` when given (a stack that extends one already built)."""
        for frame_index in frame_indices_outermost_first:
            key = (parent, frame_index)
            node = self._node_index.get(key)
            if node is None:
                node = len(self.stacks)
                self._node_index[key] = node
                self.stacks.append([parent, frame_index])
            parent = node
        return parent

    def generation(self, name: str, at_ms: int) -> int:
        self.generations.append({"name": name, "at_ms": at_ms})
        return len(self.generations) - 1

    def add_row(
        self,
        category: str,
        *,
        stack: int | None = None,
        generation: int | None = None,
        persistent: int = 0,
        persistent_bytes: int = 0,
        transient: int = 0,
        transient_bytes: int = 0,
    ) -> None:
        if not (persistent or persistent_bytes or transient or transient_bytes):
            return  # a row of zeros adds nothing to any total
        sums = self._rows.setdefault((category, stack, generation), [0, 0, 0, 0])
        sums[0] += persistent
        sums[1] += persistent_bytes
        sums[2] += transient
        sums[3] += transient_bytes

    def rows(self) -> list[dict[str, Any]]:
        rows = []
        for (category, stack, generation), sums in self._rows.items():
            row: dict[str, Any] = {"category": category, "stack": stack}
            if generation is not None:
                row["generation"] = generation
            row.update(
                persistent=sums[0],
                persistent_bytes=sums[1],
                transient=sums[2],
                transient_bytes=sums[3],
            )
            rows.append(row)
        return rows

    def document(self, header: dict[str, Any]) -> dict[str, Any]:
        doc = dict(header)
        if self.images:
            doc["images"] = self.images
        if self.frames:
            doc["frames"] = self.frames
            doc["stacks"] = self.stacks
        if self.generations:
            doc["generations"] = self.generations
        doc["allocations"] = self.rows()
        return doc


def require_int(value: Any, path: str, *, minimum: int | None = 0) -> int:
    """An integer from JSON (bools are not integers here) that fits in a signed 64-bit column;
    `minimum` None allows negatives."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidUpload(f"must be an integer, found {type_name(value)}", path)
    if minimum is not None and value < minimum:
        raise InvalidUpload(f"must be ≥ {minimum}, found {value}", path)
    if abs(value) > MAX_INT64:
        raise InvalidUpload(f"{value} does not fit in 64 bits", path)
    return value


def require_str(value: Any, path: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidUpload(f"must be a string, found {type_name(value)}", path)
    if not allow_empty and not value.strip():
        raise InvalidUpload("must be a non-empty string", path)
    return value


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)
