"""Reads about names: which images of a snapshot or a build still have frames without names, how
much memory sits under them, and which builds use each debug file."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import QuerySet

from memdash.allocations.models import Snapshot, SnapshotImage
from memdash.core.models import App, Build
from memdash.symbols import reads as symbols
from memdash.symbols.logic.names import debug_file_kind
from memdash.symbols.models import DebugFile, SymbolicationJob

MOSTLY = 0.5  # a snapshot is "mostly unsymbolicated" past this share of its bytes


@dataclass
class MissingImage:
    """An image with frames that have no name, over some snapshots."""

    name: str
    debug_id: str
    arch: str
    system: bool
    frames: int = 0  # unnamed frames (in one snapshot: all; over a build: the most in one)
    bytes: int = 0  # on stacks through them, summed over the snapshots
    snapshots: int = 0
    debug_file: DebugFile | None = None  # one is there, yet these offsets are not in it
    kind: str = "dsym"  # the debug file it needs: dsym (Mach-O) | elf (or its Breakpad .sym)

    @property
    def uuid(self) -> str:
        """The debug id as a Mach-O UUID (what Xcode, dwarfdump and mdfind show)."""
        return self.debug_id.upper()

    @property
    def file_name(self) -> str:
        """The image's file name (a monitor may name an image by its path on the device)."""
        return self.name.replace("\\", "/").rsplit("/", 1)[-1]

    @property
    def build_id_prefix(self) -> str:
        """Of an ELF image: the first 16 bytes of its GNU build id (what `readelf -n` and `file`
        show), the bytes its debug id is made of (the first three fields little-endian)."""
        try:
            return uuid.UUID(self.debug_id[:36]).bytes_le.hex()
        except ValueError:
            return ""

    def as_json(self) -> dict[str, object]:
        return {
            "image": self.name, "debug_id": self.debug_id, "arch": self.arch,
            "system": self.system, "frames": self.frames, "bytes": self.bytes,
            "snapshots": self.snapshots,
            "debug_file": self.debug_file.pk if self.debug_file else None,
        }  # fmt: skip


@dataclass
class SymbolStatus:
    """What the snapshot page says about names: the share unnamed, and a job at work."""

    unsymbolicated_bytes: int
    total_bytes: int
    jobs: list[SymbolicationJob] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.unsymbolicated_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def mostly_unsymbolicated(self) -> bool:
        return self.share > MOSTLY


def missing_images(app: App, snapshots: QuerySet[Snapshot]) -> list[MissingImage]:
    """The images with unnamed frames in these snapshots, most bytes first."""
    found: dict[tuple[str, str, str], MissingImage] = {}
    rows = SnapshotImage.objects.filter(
        snapshot__in=snapshots, unsymbolicated_frames__gt=0
    ).values_list("name", "debug_id", "arch", "system", "unsymbolicated_frames",
                  "unsymbolicated_bytes")  # fmt: skip
    for name, debug_id, arch, system, frames, nbytes in rows:
        image = found.get((name, debug_id, arch))
        if image is None:
            image = found[(name, debug_id, arch)] = MissingImage(name, debug_id, arch, system)
            image.kind = debug_file_kind(name, app.platform)
        image.frames = max(image.frames, frames)
        image.bytes += nbytes
        image.snapshots += 1
    files = symbols.files_for_images(app, {i.debug_id for i in found.values() if i.debug_id})
    for image in found.values():
        image.debug_file = files.get(image.debug_id)
    return sorted(found.values(), key=lambda i: (-i.bytes, -i.frames, i.name))


def snapshot_status(snapshot: Snapshot) -> SymbolStatus:
    """The share of the snapshot's bytes whose stacks go through an unnamed frame (stored with
    it: no query), and the jobs naming this app's frames now (queried only when unnamed)."""
    total = snapshot.persistent_bytes + snapshot.transient_bytes
    unnamed = snapshot.unsymbolicated_bytes
    jobs = list(symbols.active_jobs(snapshot.app)) if unnamed else []
    return SymbolStatus(unnamed, total, jobs)


def builds_using(app: App, debug_ids: Iterable[str]) -> dict[str, list[Build]]:
    """Per debug id, the builds with a snapshot whose frames are in that image."""
    builds: dict[str, set[int]] = defaultdict(set)
    for debug_id, build_id in (
        SnapshotImage.objects.filter(app=app, debug_id__in=list(debug_ids))
        .values_list("debug_id", "snapshot__build_id")
        .distinct()
    ):
        builds[debug_id].add(build_id)
    by_id = Build.objects.in_bulk({b for ids in builds.values() for b in ids})
    return {
        debug_id: sorted((by_id[b] for b in ids), key=lambda b: b.pk)
        for debug_id, ids in builds.items()
    }
