"""What a profile.proto heap profile gives a snapshot (`HeapContent`, made by `pprof_convert`),
as a memdash.snapshot document or straight as the `ParsedSnapshot` that is stored; and the
image entries every pprof form makes of its mappings.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memdash.allocations.logic.columns import NONE, RowColumns
from memdash.allocations.logic.document.parse import FrameInfo, ImageInfo, ParsedSnapshot
from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.numbers import MAX_INT64

I64 = NDArray[np.int64]
UNKNOWN_IMAGE = "(unknown image)"
# Mappings of the OS rather than of the program: folded by "Hide System Libraries".
SYSTEM_PATH_PREFIXES = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/system/", "/apex/")
MAX_UUID = 255  # the width of the column an image's id is stored in


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


def checked_text(text: str, path: str) -> str:
    if "\x00" in text:  # PostgreSQL text cannot hold it
        raise InvalidUpload("must not contain NUL characters", path)
    return text


@dataclass
class HeapContent:
    """What a profile gives a snapshot: images as document entries, frames as a table of
    tuples, the stack tree and the rows as arrays (a stack of -1 is none)."""

    images: list[dict[str, Any]] = field(default_factory=list)
    # (image, address, symbol, file, line or None) of each frame: a document entry or a
    # FrameInfo is made of it only when asked (a dict each would be kept for nothing)
    frame_table: list[tuple[int, int, str, str, int | None]] = field(default_factory=list)
    stack_parents: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    stack_frames: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    categories: list[str] = field(default_factory=list)
    row_category: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    row_stack: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    row_counts: I64 = field(default_factory=lambda: np.zeros((0, 4), np.int64))

    @property
    def frames(self) -> list[dict[str, Any]]:
        """The frames as document entries (what is empty or 0 left out)."""
        frames = []
        for image, address, symbol, file, line in self.frame_table:
            entry: dict[str, Any] = {"image": image, "address": address}
            if symbol:
                entry["symbol"] = symbol
            if file:
                entry["file"] = file
            if line:
                entry["line"] = line
            frames.append(entry)
        return frames

    def _stacks(self) -> tuple[list[int | None], list[int]]:
        parents: list[int | None] = self.stack_parents.tolist()
        roots = int(np.count_nonzero(self.stack_parents < 0))  # the first nodes: depth 0
        parents[:roots] = [None] * roots
        return parents, self.stack_frames.tolist()

    def _keys(self) -> list[tuple[str, int | None]]:
        stacks = self.row_stack.astype(object)
        stacks[self.row_stack < 0] = None
        names = [self.categories[i] for i in self.row_category.tolist()]
        return list(zip(names, stacks.tolist(), strict=True))

    def document(self, header: dict[str, Any]) -> dict[str, Any]:
        """The memdash.snapshot document of this content under `header`."""
        doc = dict(header)
        if self.images:
            doc["images"] = self.images
        if self.frame_table:
            parents, frames = self._stacks()
            doc["frames"] = self.frames
            doc["stacks"] = [list(node) for node in zip(parents, frames, strict=True)]
        doc["allocations"] = [
            {
                "category": category,
                "stack": stack,
                "persistent": p,
                "persistent_bytes": pb,
                "transient": t,
                "transient_bytes": tb,
            }
            for (category, stack), (p, pb, t, tb) in zip(
                self._keys(), self.row_counts.tolist(), strict=True
            )
        ]
        return doc

    def fill(self, parsed: ParsedSnapshot) -> ParsedSnapshot:
        """`parsed` (its header, from `allocations.logic.document.parse.parse_header`) with this
        content, as `allocations.logic.document.parse.parse_snapshot` makes it of `document` (each
        value here is already checked where the profile holds it)."""
        parsed.images = [
            ImageInfo(
                name=image["name"],
                uuid=image.get("uuid", ""),
                load_address=int(image["load_address"], 16),
                system=image.get("system", False),
            )
            for image in self.images
        ]
        images = [  # (every image here has a load address)
            (image.name, image.load_address or 0, image.system, image.uuid)
            for image in parsed.images
        ]
        append = parsed.frames.append
        for image, address, symbol, file, line in self.frame_table:
            name, load, system, uuid = images[image]
            append(FrameInfo(symbol, name, address - load, None, file, line, system, uuid))
        parsed.stack_parents, parsed.stack_frames = self._stacks()
        none = np.full(len(self.row_category), NONE, np.int64)
        parsed.columns = RowColumns(
            list(self.categories), self.row_category, self.row_stack, none, none, self.row_counts
        )
        return parsed
