"""Reads of debug files: an app's list, which images have one, and lookups by image and offset."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

import symbolic
from django.conf import settings
from django.db.models import Q, QuerySet
from symbolic import SymCache

from memdash.core.models import App
from memdash.symbols.logic.lookup import Located, locate, normalize_debug_id, open_symcache
from memdash.symbols.models import DebugFile, SymbolicationJob

logger = logging.getLogger(__name__)


def debug_files(app: App) -> QuerySet[DebugFile]:
    return DebugFile.objects.filter(app=app)


def files_for_images(app: App, image_ids: Iterable[str]) -> dict[str, DebugFile]:
    """The debug file of each image id that has one. An image id is what a snapshot names an
    image by: a UUID, a Breakpad id or an ELF build id; it is matched by debug id, and a build
    id also by code id. With several architectures for one id, the fullest is taken."""
    wanted: dict[str, str] = {}
    for raw in image_ids:
        normal = normalize_debug_id(raw)
        if normal:
            wanted[raw] = normal
    if not wanted:
        return {}
    codes = {raw.replace("-", "").lower() for raw in wanted}
    files = DebugFile.objects.filter(app=app).filter(
        Q(debug_id__in=set(wanted.values())) | Q(code_id__in=codes)
    )
    by_id: dict[str, DebugFile] = {}
    for debug_file in sorted(files, key=lambda f: ("debug" in f.features, f.uploaded_at)):
        by_id[debug_file.debug_id] = debug_file
        if debug_file.code_id:
            by_id[debug_file.code_id] = debug_file
    found = {}
    for raw, normal in wanted.items():
        match = by_id.get(raw.replace("-", "").lower()) or by_id.get(normal)
        if match is not None:
            found[raw] = match
    return found


class Symbolicator:
    """Frames by (image id, offset) from the debug files of one app, looked up in their
    symcaches; each image's symcache is opened once, each answer kept for the next frame."""

    def __init__(self, files: dict[str, DebugFile]) -> None:
        self.files = files
        self._answers: dict[tuple[str, int], Sequence[Located]] = {}
        self._caches: dict[str, tuple[SymCache, str] | None] = {}

    def __bool__(self) -> bool:
        return bool(self.files)

    def _cache(self, image_id: str) -> tuple[SymCache, str] | None:
        """The image's symcache and name, opened on the image's first frame only."""
        if image_id not in self._caches:
            debug_file = self.files.get(image_id)
            self._caches[image_id] = None if debug_file is None else _opened(debug_file)
        return self._caches[image_id]

    def __call__(self, image_id: str, offset: int) -> Sequence[Located]:
        key = (image_id, offset)
        answer = self._answers.get(key)
        if answer is None:
            found = self._cache(image_id)
            answer = () if found is None else locate(found[0], offset, found[1])
            self._answers[key] = answer
        return answer


def _opened(debug_file: DebugFile) -> tuple[SymCache, str] | None:
    """The debug file's symcache, or None when it cannot be read (its file lost from the media
    storage, or damaged): its frames then stay unnamed rather than failing the page."""
    try:
        cache = open_symcache(str(Path(settings.MEDIA_ROOT) / debug_file.symcache_path))
    except symbolic.SymbolicError as error:
        logger.warning("symcache of debug file %s unreadable: %s", debug_file.pk, error)
        return None
    return cache, debug_file.image_name


def symbolicator(app: App, image_ids: Iterable[str]) -> Symbolicator:
    return Symbolicator(files_for_images(app, image_ids))


def active_jobs(app: App) -> QuerySet[SymbolicationJob]:
    return SymbolicationJob.objects.filter(
        app=app, state__in=[SymbolicationJob.QUEUED, SymbolicationJob.RUNNING]
    )


def job(app: App, job_id: int) -> SymbolicationJob | None:
    return SymbolicationJob.objects.filter(app=app, pk=job_id).first()
