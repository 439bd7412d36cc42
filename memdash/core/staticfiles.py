"""The storage of collected static files: hashed names, brotli and gzip copies (whitenoise)."""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class CollectedStaticFilesStorage(CompressedManifestStaticFilesStorage):  # type: ignore[misc]  # untyped base
    """Whitenoise's storage, with hashed URLs under DEBUG too (Django's own gives the plain
    names when DEBUG is on): the demo serves its pages as production does, every file under a
    name that changes with its content, so whitenoise can let browsers keep it for ever."""

    def url(self, name: str | None, force: bool = False) -> str:
        url: str = super().url(name, force=True)
        return url
