"""The collected static files: hashed names, brotli and gzip copies (whitenoise), no source maps.

Source maps (the vendored API-docs bundles ship 6 MB of them) are not collected: no page needs
them, and compressing them was most of `collectstatic`'s time. Only the hashed files, the names
pages link to, get compressed copies; the plain names stay, uncompressed, for whatever asks for
them by that name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from django.contrib.staticfiles.apps import StaticFilesConfig as DjangoStaticFilesConfig
from whitenoise.storage import CompressedManifestStaticFilesStorage

# Our own scripts: ES modules that import each other by relative path (static/js/).
OWN_MODULES = "js/*.js"


class StaticFilesConfig(DjangoStaticFilesConfig):
    """django.contrib.staticfiles, with source maps left out of `collectstatic`."""

    ignore_patterns = [*DjangoStaticFilesConfig.ignore_patterns, "*.map"]


def _without_source_maps(
    patterns: tuple[tuple[str, tuple[object, ...]], ...],
) -> tuple[tuple[str, tuple[object, ...]], ...]:
    """Django's URL patterns of CSS and JavaScript less the `sourceMappingURL` comments (which
    name files that are not collected): a bundle's comment is left as it is, unhashed."""
    return tuple(
        (extension, tuple(found for found in each if "sourceMappingURL" not in str(found)))
        for extension, each in patterns
    )


class CollectedStaticFilesStorage(CompressedManifestStaticFilesStorage):  # type: ignore[misc]  # untyped base
    """Whitenoise's storage, with hashed URLs under DEBUG too (Django's own gives the plain
    names when DEBUG is on): the demo serves its pages as production does, every file under a
    name that changes with its content, so whitenoise can let browsers keep it for ever.

    The pages load ES modules that import each other (`import {Tree} from "./tree.js"`): their
    imports are rewritten to the hashed names too (Django's `support_js_module_import_aggregation`),
    so a module never runs beside a stale copy of another. Only in our own scripts: the vendored
    bundles (plotly, swagger-ui, the admin's) are classic scripts, where the rewriting's patterns
    would only cost time and could take a string for an import."""

    support_js_module_import_aggregation = True
    _js_module_import_aggregation_patterns = (
        OWN_MODULES,
        CompressedManifestStaticFilesStorage._js_module_import_aggregation_patterns[1],
    )

    patterns = _without_source_maps(CompressedManifestStaticFilesStorage.patterns)

    def url(self, name: str | None, force: bool = False) -> str:
        url: str = super().url(name, force=True)
        return url

    def compress_files(self, paths: Iterable[str]) -> Iterator[tuple[str, str]]:
        """Compressed copies of the hashed files only: those are what pages link to (brotli's
        best takes a minute on the plotly bundle alone; once is enough)."""
        served = set(self.hashed_files.values())
        compressed: Iterator[tuple[str, str]] = super().compress_files(
            [path for path in paths if path in served]
        )
        return compressed
