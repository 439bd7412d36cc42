"""Writes of debug files: receiving an upload of them, checking its objects, keeping them with
their symcaches, and starting the pass that names the frames already stored.

The API door streams the body to storage within MEMDASH_MAX_DEBUG_FILE_BYTES
(`receive_debug_files`) and queues its task; the worker then unpacks and checks it
(`process_debug_files`). The command works from the file or folder it is given.
Every object is read and its symcache built before any is kept, so a refused upload
stores nothing. An object is kept once per app by (debug id, architecture): the same bytes again
are the same object, and other bytes for it replace it only when they tell more (debug
information over a symbol table alone).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.utils import timezone

from memdash.core.logic.errors import InvalidUpload, UploadRefused
from memdash.core.logic.reading import copy_limited
from memdash.core.models import App, IngestKey
from memdash.core.writes.uploads import Progress, no_progress
from memdash.symbols.logic.objects import (
    FoundObject,
    describe,
    extract_zip,
    file_kind,
    inventory,
    read_head,
)
from memdash.symbols.models import BREAKPAD, DebugFile, DebugFileUpload, SymbolicationJob
from memdash.symbols.signals import debug_files_stored

log = logging.getLogger(__name__)
STORE = "debug-files"
CHUNK = 1024 * 1024


class ClaimLost(Exception):
    """Another worker claimed the upload meanwhile (this one's lease had run out)."""


@dataclass
class StoredObject:
    debug_file: DebugFile
    outcome: str  # stored | replaced | same (these bytes were here) | kept (a fuller one is)

    def as_json(self) -> dict[str, Any]:
        return {**self.debug_file.as_json(), "outcome": self.outcome}


@dataclass
class DebugFilesResult:
    objects: list[StoredObject] = field(default_factory=list)
    job: SymbolicationJob | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "objects": [o.as_json() for o in self.objects],
            "symbolication": self.job.as_json() if self.job else None,
        }


def store_root() -> Path:
    return Path(settings.MEDIA_ROOT) / STORE


def scratch_dir() -> tempfile.TemporaryDirectory[str]:
    """A scratch folder on the same file system as the store, so keeping a file is a rename."""
    root = store_root() / "tmp"
    root.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(dir=root)


def _richness(features: list[str], kind: str) -> int:
    """How much an object tells: line tables (DWARF or a Breakpad .sym) beat names alone."""
    if "debug" in features or kind == BREAKPAD:
        return 2
    return 1 if "symtab" in features else 0


def _hash_into(source: Path, target: Path) -> tuple[str, int]:
    """Copy `source` to `target` while hashing it, in chunks (a dSYM can be gigabytes)."""
    digest = hashlib.sha256()
    size = 0
    with open(source, "rb") as read, open(target, "wb") as write:
        while chunk := read.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            write.write(chunk)
    return digest.hexdigest(), size


def find_objects(
    path: Path, scratch: Path, image_name: str = "", progress: Progress = no_progress,
    file_name: str = "",
) -> list[FoundObject]:  # fmt: skip
    """The checked objects of an uploaded file (a zip is unpacked first) or of a folder;
    `progress` hears the zip unpacked, each file looked at and each object checked. A lone
    file is called `file_name` (as uploaded) in what it says, when given."""
    caches = scratch / "symcaches"
    caches.mkdir()
    root = path
    if path.is_file():
        head = read_head(path, 64)
        kind = file_kind(head)
        if kind is None:
            raise InvalidUpload(
                f"not a debug file: found {describe(head)}; memdash reads Mach-O (a dSYM), "
                "ELF and Breakpad .sym files, or a zip of them"
            )
        if kind == "zip":
            root = scratch / "unpacked"
            root.mkdir()
            extract_zip(
                path, root, settings.MEMDASH_MAX_DEBUG_UNPACKED_BYTES,
                settings.MEMDASH_MAX_DEBUG_ZIP_MEMBERS, progress,
            )  # fmt: skip
    found = inventory(
        root, caches, image_name, progress, file_name, settings.MEMDASH_MAX_PARSE_MEMORY_BYTES
    )
    if not found.objects:
        raise InvalidUpload(
            f"no Mach-O, ELF or Breakpad object in the upload ({found.files_seen} files looked "
            "at): a dSYM zip holds Contents/Resources/DWARF/<binary>"
        )
    return found.objects


def _keep(
    app: App, obj: FoundObject, kept: dict[Path, tuple[str, int, str]]
) -> tuple[str, int, str, str]:
    """Move the object's file (once per file) and its symcache into the store."""
    folder = store_root() / str(app.pk)
    folder.mkdir(parents=True, exist_ok=True)
    if obj.source not in kept:
        staged = folder / f".{os.getpid()}-{obj.source.name}.part"
        sha256, size = _hash_into(obj.source, staged)
        target = folder / sha256
        os.replace(staged, target)
        kept[obj.source] = (sha256, size, str(target.relative_to(settings.MEDIA_ROOT)))
    sha256, size, stored = kept[obj.source]
    symcache = folder / f"{obj.debug_id}-{obj.arch}-{sha256[:16]}.symcache"
    shutil.copyfile(obj.symcache, symcache)
    return sha256, size, stored, str(symcache.relative_to(settings.MEDIA_ROOT))


def store_debug_files(
    app: App,
    path: Path,
    *,
    image_name: str = "",
    key: IngestKey | None = None,
    user: object = None,
    progress: Progress = no_progress,
    file_name: str = "",
    outcome: Callable[[DebugFilesResult], bool] = lambda result: True,
) -> DebugFilesResult:
    """Check and keep the objects of `path` (a file as uploaded, or a folder); raises
    InvalidUpload / TooLarge with nothing stored. Starts a symbolication job when an object is
    new or replaces one. `outcome` records the result in the same transaction (an upload's
    claim holder: False, its claim was lost, and nothing is stored: ClaimLost)."""
    with scratch_dir() as scratch:
        objects = find_objects(path, Path(scratch), image_name, progress, file_name)
        result = DebugFilesResult()
        kept: dict[Path, tuple[str, int, str]] = {}
        with transaction.atomic():
            for position, obj in enumerate(objects):
                progress("store", position / len(objects))
                result.objects.append(_store_object(app, obj, kept, key, user))
            changed = sorted(
                {
                    o.debug_file.debug_id
                    for o in result.objects
                    if o.outcome in ("stored", "replaced")
                }
            )
            if changed:
                result.job = job = new_job(app, changed)
                transaction.on_commit(
                    lambda: debug_files_stored.send(sender=DebugFile, app=app, job=job)
                )
            if not outcome(result):
                raise ClaimLost("another worker claimed the upload meanwhile")
        progress("store", 1.0)
    if result.job is not None:
        result.job.refresh_from_db()
    return result


def _store_object(
    app: App,
    obj: FoundObject,
    kept: dict[Path, tuple[str, int, str]],
    key: IngestKey | None,
    user: object,
) -> StoredObject:
    existing = DebugFile.objects.filter(app=app, debug_id=obj.debug_id, arch=obj.arch).first()
    if existing is not None and _richness(existing.features, existing.kind) >= _richness(
        obj.features, obj.kind
    ):
        digest = hashlib.sha256()
        with open(obj.source, "rb") as stream:
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
        return StoredObject(existing, "same" if digest.hexdigest() == existing.sha256 else "kept")
    sha256, size, stored, symcache = _keep(app, obj, kept)
    values = {
        "code_id": obj.code_id.lower(),
        "kind": obj.kind,
        "features": obj.features,
        "image_name": obj.image_name[:255],
        "file_name": obj.file_name[-255:],
        "size": size,
        "sha256": sha256,
        "path": stored,
        "symcache_path": symcache,
        "uploaded_at": timezone.now(),
        "key": key,
        "user": user if getattr(user, "pk", None) else None,
    }
    debug_file, created = DebugFile.objects.update_or_create(
        app=app, debug_id=obj.debug_id, arch=obj.arch, defaults=values
    )
    return StoredObject(debug_file, "stored" if created else "replaced")


def new_job(app: App, debug_ids: list[str]) -> SymbolicationJob:
    """A queued job naming the stored frames in the images of these debug ids (the floor that
    stores frames runs it, and keys the app's older snapshots again in the same pass)."""
    return SymbolicationJob.objects.create(app=app, debug_ids=debug_ids)


# --- an upload of debug files: received by the request, processed by a worker --------------------

# What a file name may hold: printable characters (no NUL or control character), once only the
# last part of a path is kept (`a/b/../Chat.dSYM.zip` is `Chat.dSYM.zip`).
MAX_FILENAME = 255


def clean_filename(name: str, field_name: str = "filename") -> str:
    """The upload's file name as kept: the last part of what was sent (none for one that names
    no file, `..`); InvalidUpload (400) for one with control characters or past 255
    characters (as the schema says: `FILENAME`). Never a path on this machine: the body is
    stored under a name of memdash's."""
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InvalidUpload("must not contain control characters", field_name)
    if len(name) > MAX_FILENAME:
        raise InvalidUpload(
            f"is {len(name):,} characters long, more than {MAX_FILENAME}", field_name
        )
    last = name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].strip()
    return "" if last in (".", "..") else last


def receive_debug_files(
    app: App,
    chunks: Iterable[bytes],
    *,
    filename: str = "",
    image_name: str = "",
    key: IngestKey | None = None,
) -> DebugFileUpload:
    """Stream the body to storage (TooLarge past MEMDASH_MAX_DEBUG_FILE_BYTES, while reading)
    and record the upload, queued; nothing of it is unpacked or read here."""
    filename = clean_filename(filename)
    image_name = clean_filename(image_name, "name")
    with tempfile.TemporaryFile() as spool:
        received = copy_limited(chunks, spool, settings.MEMDASH_MAX_DEBUG_FILE_BYTES)
        spool.seek(0)
        upload = DebugFileUpload(
            app=app, key=key, filename=filename, image_name=image_name, size=received.size,
            sha256=received.sha256,
        )  # fmt: skip
        upload.file.save(f"{received.sha256}.bin", File(spool), save=False)
    upload.save()
    return upload


@contextmanager
def local_copy(upload: DebugFileUpload, scratch: Path) -> Iterator[Path]:
    """The stored body as a local file (zipfile and symbolic read files): its own path on the
    file system storage, else a copy in `scratch` (object storage)."""
    try:
        yield Path(upload.file.path)
        return
    except NotImplementedError:
        pass
    copy = scratch / "body"
    with upload.file.open("rb") as source, open(copy, "wb") as out:
        shutil.copyfileobj(source, out, CHUNK)
    yield copy


def process_debug_files(
    upload: DebugFileUpload, after: Callable[[DebugFileUpload], None] = lambda upload: None
) -> DebugFileUpload:
    """The worker's part: claim the upload, unpack and check its objects (symcaches made here),
    keep them, and record what came of it; a refusal is recorded with its status and path, a
    failure of ours as `failed`. Never raises for the upload's content. The body is deleted
    once processed (its objects are kept in the store)."""
    if upload.status != upload.QUEUED or not upload.claim():  # finished, or another's
        upload.refresh_from_db()
        return upload
    try:
        with scratch_dir() as scratch, local_copy(upload, Path(scratch)) as body:
            result = store_debug_files(
                upload.app, body, image_name=upload.image_name or upload.filename,
                key=upload.key, file_name=upload.filename,
                outcome=lambda stored: upload.finish(stored.as_json()),
            )  # fmt: skip
        if result.job is not None:  # the job's state since (the embedded default ran it)
            upload.update_result(result.as_json())
    except ClaimLost:
        log.warning("debug files upload %s: claimed by another worker meanwhile", upload.pk)
        upload.refresh_from_db()
        return upload
    except UploadRefused as exc:
        upload.reject(exc.message, exc.path, exc.status)
    except Exception:  # a bug of ours, not the uploader's
        log.exception("debug files upload %s failed", upload.pk)
        upload.fail()
    if upload.status == upload.DONE:
        upload.file.delete(save=True)
    after(upload)
    return upload
